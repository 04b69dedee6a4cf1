// expect: PASSED
// Honest and slow: a naive GEMM with fp32 accumulation.
#include "common.cuh"

namespace {
fk_status run(const void* raw, void* stream) {
  return adv::naive<float>(*static_cast<const fk::ops::LinearArgs*>(raw), static_cast<cudaStream_t>(stream));
}
}  // namespace

FK_EXPORT_CANDIDATE(linear, run)
