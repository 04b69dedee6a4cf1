// The CUDA devices, as the runtime reports them.
#include <cuda_runtime.h>

#include <cstdio>

#include "harness/device/device_info.h"
#include "fk/cuda/check.h"

namespace fk::bench {

namespace {

// An attribute the driver may not report (clocks on some virtualised GPUs): 0 then.
int attribute_or_zero(cudaDeviceAttr attr, int device) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, attr, device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return v;
}

std::string uuid_string(const cudaUUID_t& u) {
  char buf[64];
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  std::snprintf(buf, sizeof buf, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return buf;
}

}  // namespace

GpuInfo query_gpu(int device) {
  int count = 0;
  FK_CUDA_CHECK(cudaGetDeviceCount(&count));
  FK_CHECK(device >= 0 && device < count, "GPU ", device, " does not exist (", count, " visible)");
  cudaDeviceProp p{};
  FK_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  GpuInfo g;
  g.index = device;
  g.name = p.name;
  g.uuid = uuid_string(p.uuid);
  g.cc_major = p.major;
  g.cc_minor = p.minor;
  g.sm_count = p.multiProcessorCount;
  g.l2_bytes = static_cast<uint64_t>(p.l2CacheSize);
  g.persisting_l2_max_bytes = static_cast<uint64_t>(p.persistingL2CacheMaxSize);
  g.memory_bytes = p.totalGlobalMem;
  g.memory_bus_bits = p.memoryBusWidth;
  g.shared_mem_per_sm_bytes = p.sharedMemPerMultiprocessor;
  g.ecc = p.ECCEnabled != 0;
  g.pci_bus = p.pciBusID;
  g.sm_clock_khz = attribute_or_zero(cudaDevAttrClockRate, device);
  g.memory_clock_khz = attribute_or_zero(cudaDevAttrMemoryClockRate, device);
  return g;
}

EnvReport query_env() {
  EnvReport r;
  r.host = query_host();
  r.built_with_cuda = true;
  if (cudaDriverGetVersion(&r.driver_version) != cudaSuccess) r.driver_version = 0;
  if (cudaRuntimeGetVersion(&r.runtime_version) != cudaSuccess) r.runtime_version = 0;
  cudaGetLastError();
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    r.cuda_error = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    cudaGetLastError();
    return r;
  }
  for (int d = 0; d < count; ++d) r.gpus.push_back(query_gpu(d));
  return r;
}

}  // namespace fk::bench
