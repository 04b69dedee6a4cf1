// The f16 instantiation of fused_experts' grouped GEMM (a translation unit of its own:
// CUTLASS instantiations are slow to compile, and the two types build in parallel). A
// compile-check build (FK_KERNEL_SUBSET) compiles the bf16 one only: the kernels are the
// same template.
#ifdef FK_KERNEL_SUBSET
#include <cuda_fp16.h>

#include "fk/status.h"
#include "ops/moe/moe_grouped_gemm.h"

namespace fk::ops::moe_grouped {
template <>
void run_grouped_gemm<__half>(const GroupedGemm&, void*) {
  FK_FAIL(FK_ERR_UNSUPPORTED, "fused_experts: this build compiles only the bf16 grouped GEMM (FK_KERNEL_SUBSET, for ",
          "machines without a GPU); configure with -DFK_KERNEL_SUBSET=OFF to run f16");
}
}  // namespace fk::ops::moe_grouped
#else
#include "ops/moe/moe_grouped_gemm_sm90.cuh"

namespace fk::ops::moe_grouped {
template void run_grouped_gemm<__half>(const GroupedGemm& g, void* stream);
}  // namespace fk::ops::moe_grouped
#endif
