// Token sampling. Shapes beside each field: B rows (requests), V vocabulary size.
#pragma once
#include "fk/op.h"

namespace fk::ops {

// out[b] = one token drawn from logits[b, :] with row b's parameters. Per row, with
// x = logits[b, :]:
//
//  rank order  tokens sorted by x descending, ties by token id ascending. Every filter
//              keeps a prefix of this order, and the draw walks it.
//  greedy      temperature == 0: out = the first token in rank order (argmax, lowest id
//              on ties). The other parameters are ignored.
//  weights     temperature T > 0: w_v = exp((x_v - max(x)) / T), the softmax numerators
//              of the scaled logits (p_v = w_v / sum(w)). Then, in this order:
//  1. top-k    0 < top_k < V: keep the first top_k tokens. top_k = 0 or >= V: off.
//  2. top-p    top_p < 1: with Z = the sum of w over the top-k survivors, keep a survivor
//              iff the w-mass of the survivors ranked before it is <= top_p * Z (the
//              shortest prefix whose mass exceeds top_p * Z). top_p = 1: off.
//  3. min-p    min_p > 0: keep survivors with p_v >= min_p * p_max, i.e. w_v >= min_p.
//              (Relative to the most likely token, so it is the same set before or after
//              top-k; it applies after top-p.) min_p = 0: off.
//  4. draw     u = philox_uniform(seed[b], offset[b], 0) in [0, 1) (fk/philox.h, so CPU
//              and GPU draw the same u). With survivors s_1, s_2, ... in rank order and Z
//              their total w: out = the first s_i with w_{s_1} + ... + w_{s_i} > u * Z.
//              (Should rounding leave none, the last survivor with w > 0.)
// The top token always survives, and tokens with w = 0 (logit -inf, or underflow) are never
// drawn. top_k = 1, or a top_p below the top token's probability, gives the greedy token.
// The offset is the request's step: a new (seed, offset) pair for every token drawn.
//
// Valid parameters: 0 <= temperature (finite), top_k >= 0, 0 < top_p <= 1,
// 0 <= min_p <= 1; logits finite or -inf with at least one finite logit per sampled row.
// The CPU reference reports invalid values as errors. The CUDA baseline does not read
// parameters back to the host; it treats temperature <= 0 or NaN as greedy, top_k <= 0 as
// off, top_p >= 1 or NaN as off, top_p <= 0 as greedy, min_p <= 0 or NaN as off and
// min_p > 1 as 1, and gives the greedy token for a row without a finite maximum.
struct SampleArgs {
  static constexpr const char* kName = "sample";
  TensorView out;          // [B] written; i64 token ids
  TensorView logits;       // [B, V] read; f32/bf16; rows contiguous (row stride free)
  TensorView temperature;  // [B] read; f32; 0 = greedy
  TensorView top_k;        // [B] read; i32; 0 (or >= V) = off
  TensorView top_p;        // [B] read; f32; 1 = off
  TensorView min_p;        // [B] read; f32; 0 = off
  TensorView seed;         // [B] read; i64; Philox key of the request
  TensorView offset;       // [B] read; i64; Philox offset (the request's step)
};

// Logits processors: what a request's logit_bias, min_tokens, bad_words and penalties do to
// its row of logits before `sample`, in vLLM's order (bad words, min_tokens and logit_bias,
// then the penalties). The engine calls them only for steps where some request uses them.
// Row b's entries of a packed (CSR) list are [indptr[b], indptr[b + 1]), with indptr[0] = 0,
// non-decreasing, and indptr[B] = the list's length. Token lists hold per row the prompt's
// tokens, then the output's: tokens[token_indptr[b] + prompt_len[b] ...] is row b's output.
// The CPU references report bad ids, lengths and offsets as errors; the CUDA baselines do not
// read values back to the host and skip entries with ids outside [0, V).

// out[b, v] = logits[b, v] + the sum of bias[i] over row b's entries i with ids[i] == v.
// A bias of -inf bans the token (min_tokens' EOS and stop ids); other biases are finite.
// Also the f32 copy of the logits that the other processors update in place.
struct ApplyLogitBiasArgs {
  static constexpr const char* kName = "apply_logit_bias";
  TensorView out;     // [B, V] written; f32
  TensorView logits;  // [B, V] read; f32/bf16; rows contiguous (row stride free)
  TensorView ids;     // [N] read; i32 token ids in [0, V)
  TensorView bias;    // [N] read; f32, finite or -inf
  TensorView indptr;  // [B + 1] read; i32; row b's entries
};

// vLLM's bad words: for each word of row b, token sequence w[0..L) (L >= 1), when row b's
// output ends with w[0..L-1) (always for L = 1), logits[b, w[L-1]] = -inf. Only the output
// counts (a word's prefix in the prompt does not).
struct ApplyBadWordsArgs {
  static constexpr const char* kName = "apply_bad_words";
  TensorView logits;        // [B, V] read and updated; f32; rows contiguous (row stride free)
  TensorView tokens;        // [N] read; i32; per row its prompt then its output (token_indptr)
  TensorView token_indptr;  // [B + 1] read; i32
  TensorView prompt_len;    // [B] read; i32; 0 <= prompt_len[b] <= row b's token count
  TensorView word_tokens;   // [W] read; i32 token ids in [0, V)
  TensorView word_indptr;   // [NW + 1] read; i32; word j = word_tokens[word_indptr[j] .. word_indptr[j+1]), not empty
  TensorView row_words;     // [B + 1] read; i32; row b's words are j in [row_words[b], row_words[b+1])
};

// vLLM's penalties. With c_v the number of times token v occurs in row b's output and
// seen_v whether it occurs in its prompt or output, each logit x = logits[b, v] becomes
//   repetition: seen_v ? (x > 0 ? x / rep : x * rep) : x
//   frequency and presence: x - freq * c_v - pres * (c_v > 0)
// rep = repetition_penalty[b] > 0 (1 = off); freq, pres finite (0 = off; OpenAI's range is
// [-2, 2]). -inf logits stay -inf.
struct ApplyPenaltiesArgs {
  static constexpr const char* kName = "apply_penalties";
  TensorView logits;              // [B, V] read and updated; f32; rows contiguous (row stride free)
  TensorView tokens;              // [N] read; i32 ids in [0, V); per row its prompt then its output
  TensorView token_indptr;        // [B + 1] read; i32
  TensorView prompt_len;          // [B] read; i32
  TensorView repetition_penalty;  // [B] read; f32
  TensorView frequency_penalty;   // [B] read; f32
  TensorView presence_penalty;    // [B] read; f32
  TensorView counts;              // [B, V] workspace; i32 (the CUDA baseline's per-row token counts)
};

}  // namespace fk::ops
