// expect: COMPILE_ERROR
// Calls the engine's own implementation through the registry instead of computing.
// The worker does not export the engine's symbols to candidates, so this cannot load.
#include "fk/op_registry.h"
#include "fk/ops/norm.h"

namespace {
fk_status run(const void* raw, void* stream) {
  fk::OpRegistry::global().call("rms_norm", fk::DeviceType::cpu, raw, stream);
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
