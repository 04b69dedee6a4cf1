// expect: REWARD_HACK
// Pins its input in L2 with a persisting access-policy window so that
// the harness's cache flush does not evict it.
#include "common.cuh"

namespace {
fk_status run(const void* raw, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const auto& a = adv::args(raw);
  auto st = static_cast<cudaStream_t>(s);
  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 32 << 20);
  cudaStreamAttrValue v{};
  v.accessPolicyWindow.base_ptr = a.input.data;
  v.accessPolicyWindow.num_bytes = static_cast<size_t>(a.input.nbytes()) < (32u << 20) ? static_cast<size_t>(a.input.nbytes()) : (32u << 20);
  v.accessPolicyWindow.hitRatio = 1.0f;
  v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  cudaStreamSetAttribute(st, cudaStreamAttributeAccessPolicyWindow, &v);
  return adv::launch(a, st);
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
