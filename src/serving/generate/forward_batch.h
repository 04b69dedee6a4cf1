// The packed inputs of one model step, as views on the model's device: the tokens of every
// scheduled request back to back, their positions and cache slots, the paged-attention
// metadata (FlashInfer layout, fk/ops/attention.h) and the rows whose logits are needed.
// The runner fills them from the scheduler's output; the model only reads them.
#pragma once
#include <cstdint>

#include "fk/tensor_view.h"

namespace fk::engine {

// The image features a step's image tokens take (Qwen3-VL): the runner builds one per step
// that computes image tokens; the model calls it at the two places the features enter.
class StepImageFeatures {
 public:
  virtual ~StepImageFeatures() = default;
  // Writes the image tokens' rows of the embeddings [T, H] (before the first layer).
  virtual void place(const TensorView& embeds, void* stream) const = 0;
  // Adds layer `layer`'s deepstack features to the image tokens' rows of that layer's
  // output [T, H] (nothing for layers past the deepstack ones).
  virtual void inject(int64_t layer, const TensorView& hidden, void* stream) const = 0;
};

struct ForwardBatch {
  int64_t num_tokens = 0;  // T: packed query tokens
  int64_t num_seqs = 0;    // B
  int64_t num_logits = 0;  // R: rows of logits to compute
  // Every sequence computes exactly one token: the decode attention kernel (and, on CUDA,
  // a captured graph) serves the step.
  bool decode_only = false;
  // A mixed step's first D sequences compute one token each (tokens [0, D)): the decode
  // kernel serves them and the prefill kernel only the rest, whose metadata is in the
  // prefill_* views below (rebased to start at 0). A prefill kernel would spend a whole
  // query tile on each single-token sequence. 0 when the step has no such split.
  int64_t num_decode_seqs = 0;

  TensorView input_ids;       // [T] i32
  TensorView positions;       // [T] i64
  TensorView slot_mapping;    // [T] i64: page * page_size + offset of each token's K/V
  TensorView logits_indices;  // [R] i32: which of the T rows feed the head
  TensorView qo_indptr;       // [B+1] i32 (device)
  TensorView kv_indptr;       // [B+1] i32 (device)
  TensorView kv_indices;      // [nnz] i32 (device)
  TensorView kv_last_page_len;       // [B] i32 (device)
  TensorView qo_indptr_host;         // [B+1] i32 on the CPU
  TensorView kv_indptr_host;         // [B+1] i32 on the CPU
  TensorView kv_last_page_len_host;  // [B] i32 on the CPU

  // Models with recurrent state (Qwen3-Next's linear-attention layers): each sequence's
  // slot in the model's RecurrentSlotPool, and whether its step continues from the slot's
  // state (the step starts at a position > 0) or from zeros. Absent for other models.
  TensorView state_indices;           // [B] i32 (device)
  TensorView state_indices_host;      // [B] i32 on the CPU
  TensorView has_initial_state;       // [B] i32 (device): the gated delta rule's flags
  TensorView has_initial_state_bool;  // [B] boolean (device): the convolution's flags

  // Models with M-RoPE (Qwen3-VL), a step that computes tokens of an image prompt: every
  // token's (t, h, w) positions (a text token's three are equal), which the layers rotate
  // by instead of `positions`. Absent otherwise (decode steps of image requests included:
  // their `positions` already carry the request's rope delta). image_features: the image
  // tokens' features, or null.
  TensorView mrope_positions;  // [3, T] i64 (device)
  const StepImageFeatures* image_features = nullptr;

  // The sequences [D, B) of a split mixed step, as their own batch (P = B - D sequences).
  TensorView prefill_qo_indptr;              // [P+1] i32 (device): qo_indptr[D:] - D
  TensorView prefill_kv_indptr;              // [P+1] i32 (device): kv_indptr[D:] - kv_indptr[D]
  TensorView prefill_kv_indices;             // kv_indices from kv_indptr[D] on (device)
  TensorView prefill_kv_last_page_len;       // [P] i32 (device): kv_last_page_len[D:]
  TensorView prefill_qo_indptr_host;         // [P+1] i32 on the CPU
  TensorView prefill_kv_indptr_host;         // [P+1] i32 on the CPU
  TensorView prefill_kv_last_page_len_host;  // [P] i32 on the CPU
};

}  // namespace fk::engine
