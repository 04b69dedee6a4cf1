// oasis_block's CUDA baseline: its parts' CUDA baselines through the registry.
#include "fk/op_registry.h"
#include "ops/dit/oasis_block_composed.h"

namespace fk::ops {
namespace {

FK_REGISTER_IMPL("oasis_block", cuda, oasis_block_composed_cuda);

}  // namespace
}  // namespace fk::ops
