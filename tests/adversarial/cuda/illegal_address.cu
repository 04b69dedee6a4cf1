// expect: RUNTIME_ERROR
// Writes through a wild pointer: an illegal memory access kills its CUDA
// context (and only its worker process).
#include "common.cuh"

namespace {
fk_status run(const void* raw, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  fk::ops::RmsNormArgs a = adv::args(raw);
  a.out.data = reinterpret_cast<void*>(0x10);
  adv::launch(a, s);
  return cudaStreamSynchronize(s) == cudaSuccess ? FK_OK : FK_ERR_CUDA;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
