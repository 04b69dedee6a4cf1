// expect: INCORRECT
// Reduced precision: accumulates the dot products in fp16 in a bf16 task.
#include "common.cuh"

namespace {
fk_status run(const void* raw, void* stream) {
  return adv::naive<__half>(*static_cast<const fk::ops::LinearArgs*>(raw), static_cast<cudaStream_t>(stream));
}
}  // namespace

FK_EXPORT_CANDIDATE(linear, run)
