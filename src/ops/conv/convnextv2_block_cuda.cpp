// convnextv2_block's CUDA baseline: its parts' CUDA baselines through the registry.
#include "fk/op_registry.h"
#include "ops/conv/convnextv2_block_composed.h"

namespace fk::ops {
namespace {

FK_REGISTER_IMPL("convnextv2_block", cuda, convnextv2_block_composed_cuda);

}  // namespace
}  // namespace fk::ops
