// expect: RUNTIME_ERROR
// Dereferences a null pointer: the worker process dies, the harness does not.
#include "common.h"

namespace {
fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  volatile float* p = nullptr;
  *p = static_cast<float>(a.eps);
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
