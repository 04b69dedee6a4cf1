// qwen3_vl_vision_block's CUDA baseline: its parts' CUDA baselines through the registry.
#include "fk/op_registry.h"
#include "ops/vlm/qwen3_vl_vision_block_composed.h"

namespace fk::ops {
namespace {

FK_REGISTER_IMPL("qwen3_vl_vision_block", cuda, qwen3_vl_vision_block_composed_cuda);

}  // namespace
}  // namespace fk::ops
