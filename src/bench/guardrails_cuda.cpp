#include <cuda_runtime.h>

#include "bench/guardrails.h"
#include "fk/cuda/check.h"

namespace fk::bench {

std::string l2_tampering(void* stream) {
  cudaStreamAttrValue v{};
  FK_CUDA_CHECK(cudaStreamGetAttribute(static_cast<cudaStream_t>(stream), cudaStreamAttributeAccessPolicyWindow, &v));
  if (v.accessPolicyWindow.num_bytes > 0)
    return concat("the candidate set a persisting-L2 access policy window of ", v.accessPolicyWindow.num_bytes,
                  " bytes on the harness's stream");
  size_t set_aside = 0;
  FK_CUDA_CHECK(cudaDeviceGetLimit(&set_aside, cudaLimitPersistingL2CacheSize));
  if (set_aside > 0) return concat("the candidate reserved ", set_aside, " bytes of L2 for persisting accesses");
  return "";
}

}  // namespace fk::bench
