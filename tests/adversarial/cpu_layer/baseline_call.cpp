// expect: COMPILE_ERROR
// Runs the engine's own layer (its registry calls of the parts) instead of computing.
// The worker does not export the engine's symbols to candidates, so this cannot load.
#include "fk/op_registry.h"
#include "fk/ops/layer.h"

namespace {
fk_status run(const void* raw, void* stream) {
  return fk::OpRegistry::global().def("decoder_layer").composed[0](raw, stream);
}
}  // namespace

FK_EXPORT_CANDIDATE(decoder_layer, run)
