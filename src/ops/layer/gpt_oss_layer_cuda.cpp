// gpt_oss_layer's CUDA baseline: its parts' CUDA baselines through the registry
// (gpt_oss_layer_composed.cpp), with the attention op's plan as its plan step.
#include "fk/op_registry.h"
#include "ops/layer/gpt_oss_layer_composed.h"

namespace fk::ops {
namespace {

FK_REGISTER_IMPL("gpt_oss_layer", cuda, gpt_oss_layer_composed_cuda);
FK_REGISTER_PLAN("gpt_oss_layer", cuda, gpt_oss_layer_plan_cuda);

}  // namespace
}  // namespace fk::ops
