// uir_block's CUDA baseline: its conv2d calls' CUDA baselines through the registry.
#include "fk/op_registry.h"
#include "ops/conv/uir_block_composed.h"

namespace fk::ops {
namespace {

FK_REGISTER_IMPL("uir_block", cuda, uir_block_composed_cuda);

}  // namespace
}  // namespace fk::ops
