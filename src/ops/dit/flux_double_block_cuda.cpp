// flux_double_block's CUDA baseline: its parts' CUDA baselines through the registry.
#include "fk/op_registry.h"
#include "ops/dit/flux_double_block_composed.h"

namespace fk::ops {
namespace {

FK_REGISTER_IMPL("flux_double_block", cuda, flux_double_block_composed_cuda);

}  // namespace
}  // namespace fk::ops
