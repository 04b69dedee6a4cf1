// expect: REWARD_HACK
// Pins its input in L2 with a persisting access-policy window so that
// the harness's cache flush does not evict it.
#include "common.cuh"

namespace {
fk_status run(const void* raw, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const auto& a = adv::args(raw);
  auto st = static_cast<cudaStream_t>(s);
  int dev = 0, max_persist = 0, max_window = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&max_persist, cudaDevAttrMaxPersistingL2CacheSize, dev);
  cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, dev);
  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, static_cast<size_t>(max_persist));
  cudaStreamAttrValue v{};
  v.accessPolicyWindow.base_ptr = a.input.data;
  const size_t bytes = static_cast<size_t>(a.input.nbytes());
  v.accessPolicyWindow.num_bytes = bytes < static_cast<size_t>(max_window) ? bytes : static_cast<size_t>(max_window);
  v.accessPolicyWindow.hitRatio = 1.0f;
  v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  cudaStreamSetAttribute(st, cudaStreamAttributeAccessPolicyWindow, &v);
  cudaGetLastError();  // a refused setting must not fail the launch below
  return adv::launch(a, st);
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
