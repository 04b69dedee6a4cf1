// The Batch pattern's one-shot runner for text encoders: a batch of token sequences in,
// per-sequence outputs out. It packs the sequences without padding (cu_seqlens), computes
// RoBERTa's position ids, runs one forward pass of the loaded model and brings the outputs
// to the host, where BGE-M3's pooling is applied as its own code does it:
//   dense   = normalize(last_hidden_state[CLS])              (the first token's row)
//   sparse  = relu(sparse_linear(last_hidden_state)) per token, and the lexical weights:
//             per token id, the largest weight in the sequence, special tokens (bos, eos,
//             pad, unk) and zero weights left out
//   colbert = normalize(colbert_linear(last_hidden_state[1:]))  (n - 1 vectors)
// and with ColBERT's projection (colbert_encode.h picks the rows):
//   colbert = normalize(linear(last_hidden_state))             (n vectors)
// normalize(x) = x / max(||x||_2, 1e-12), as torch.nn.functional.normalize; in double.
// No KV cache, no scheduler: a batch larger than the model was loaded for is an error.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "models/encoder/xlm_roberta_model.h"

namespace fk::models::encoder {

struct EncoderOutput {
  int64_t tokens = 0;
  std::vector<float> last_hidden_state;    // [tokens, H] row-major (when asked for)
  std::vector<float> dense;                // [H]
  std::vector<float> sparse;               // [tokens]: relu(sparse logit) per token (heads only)
  std::map<int64_t, float> lexical_weights;  // token id -> weight (heads only)
  std::vector<float> colbert;              // [tokens - 1, H] row-major (heads only)
};

struct EmbedOptions {
  bool hidden_states = false;  // also return last_hidden_state
  // Per sequence, how many of its first tokens are attention keys (the model's seqused_k:
  // ColBERT's [MASK]-padded queries); empty: every token.
  std::vector<int32_t> key_lens;
};

// RoBERTa's position ids of one sequence: pad_token_id + 1 + the index of the token among
// the sequence's non-pad tokens, and pad_token_id for a pad token (HF's
// create_position_ids_from_input_ids).
std::vector<int32_t> roberta_position_ids(const std::vector<int32_t>& ids, int64_t pad_token_id);

// The position ids the config's family gives a sequence: RoBERTa's, or BERT's 0, 1, ...
std::vector<int32_t> encoder_position_ids(const std::vector<int32_t>& ids, const XlmRobertaConfig& config);

// Runs the batch on the model's device and stream (LoadOptions); returns one output per
// sequence, in order. Throws naming the sequence for an empty one or an id outside the
// vocabulary.
std::vector<EncoderOutput> embed_batch(XlmRobertaModel& model, const std::vector<std::vector<int32_t>>& sequences,
                                       const EmbedOptions& options = {});

}  // namespace fk::models::encoder
