// moe_layer's CUDA baseline: its parts' CUDA baselines through the registry
// (moe_layer_composed.cpp), with the attention op's plan as its plan step.
#include "fk/op_registry.h"
#include "ops/layer/moe_layer_composed.h"

namespace fk::ops {
namespace {

FK_REGISTER_IMPL("moe_layer", cuda, moe_layer_composed_cuda);
FK_REGISTER_PLAN("moe_layer", cuda, moe_layer_plan_cuda);

}  // namespace
}  // namespace fk::ops
