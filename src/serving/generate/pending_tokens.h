// Asynchronous scheduling (scheduler.h): a step scheduled while the step before it still
// runs does not know the tokens that step samples. The runner packs a placeholder for each
// such input and, on the device's stream, copies the sampled token into place before the
// forward pass: input_ids[dst[j]] = sampled[src[j]] for every j with dst[j] >= 0.
#pragma once
#include "fk/tensor_view.h"

namespace fk::engine {

// input_ids [T] i32; sampled [S] i64 (the previous step's sampler output); dst, src [J] i32
// (dst < 0: padding, skipped). All on one device; async on `stream` for CUDA.
void fill_pending_tokens(const TensorView& input_ids, const TensorView& sampled, const TensorView& dst,
                         const TensorView& src, void* stream);
// The CUDA launch (pending_tokens.cu; a "built without CUDA" error in CPU builds).
void fill_pending_tokens_cuda(const TensorView& input_ids, const TensorView& sampled, const TensorView& dst,
                              const TensorView& src, void* stream);

}  // namespace fk::engine
