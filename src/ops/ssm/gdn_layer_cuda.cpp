// gdn_layer's CUDA baseline: its parts' CUDA baselines through the registry.
#include "fk/op_registry.h"
#include "ops/ssm/gdn_layer_composed.h"

namespace fk::ops {
namespace {

FK_REGISTER_IMPL("gdn_layer", cuda, gdn_layer_composed_cuda);

}  // namespace
}  // namespace fk::ops
