// The bf16 instantiation of fused_experts' grouped GEMM (a translation unit of its own:
// CUTLASS instantiations are slow to compile, and the two types build in parallel).
#include "ops/moe/moe_grouped_gemm_sm90.cuh"

namespace fk::ops::moe_grouped {
template void run_grouped_gemm<__nv_bfloat16>(const GroupedGemm& g, void* stream);
}  // namespace fk::ops::moe_grouped
