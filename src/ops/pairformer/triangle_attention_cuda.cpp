// triangle_attention's CUDA baseline: its parts' CUDA baselines through the registry, with
// the layout kernels of triangle_attention_layout.cu between them.
#include "fk/op_registry.h"
#include "ops/pairformer/triangle_attention_composed.h"

namespace fk::ops {
namespace {

FK_REGISTER_IMPL("triangle_attention", cuda, triangle_attention_composed_cuda);

}  // namespace
}  // namespace fk::ops
