// single_attention_pair_bias's CUDA baseline: its parts' CUDA baselines through the registry.
#include "fk/op_registry.h"
#include "ops/pairformer/single_attention_pair_bias_composed.h"

namespace fk::ops {
namespace {

FK_REGISTER_IMPL("single_attention_pair_bias", cuda, single_attention_pair_bias_composed_cuda);

}  // namespace
}  // namespace fk::ops
