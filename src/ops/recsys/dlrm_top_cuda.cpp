// dlrm_top's CUDA baseline: its parts' CUDA baselines through the registry.
#include "fk/op_registry.h"
#include "ops/recsys/dlrm_top_composed.h"

namespace fk::ops {
namespace {

FK_REGISTER_IMPL("dlrm_top", cuda, dlrm_top_composed_cuda);

}  // namespace
}  // namespace fk::ops
