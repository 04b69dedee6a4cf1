#include <cuda_runtime.h>

#include "harness/time/guardrails.h"
#include "fk/cuda/check.h"

namespace fk::bench {

namespace {
size_t g_initial_set_aside = 0;
bool g_armed = false;
}  // namespace

void l2_guard_arm() {
  FK_CUDA_CHECK(cudaDeviceGetLimit(&g_initial_set_aside, cudaLimitPersistingL2CacheSize));
  g_armed = true;
}

std::string l2_tampering(void* stream) {
  FK_CHECK(g_armed, "l2_tampering before l2_guard_arm");
  cudaStreamAttrValue v{};
  FK_CUDA_CHECK(cudaStreamGetAttribute(static_cast<cudaStream_t>(stream), cudaStreamAttributeAccessPolicyWindow, &v));
  if (v.accessPolicyWindow.num_bytes > 0)
    return concat("the candidate set a persisting-L2 access policy window of ", v.accessPolicyWindow.num_bytes,
                  " bytes on the harness's stream");
  size_t set_aside = 0;
  FK_CUDA_CHECK(cudaDeviceGetLimit(&set_aside, cudaLimitPersistingL2CacheSize));
  if (set_aside != g_initial_set_aside)
    return concat("the candidate changed the L2 set-aside for persisting accesses from ", g_initial_set_aside, " to ",
                  set_aside, " bytes");
  return "";
}

}  // namespace fk::bench
