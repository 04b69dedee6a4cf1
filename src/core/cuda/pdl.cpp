#include <cstdlib>
#include <cstring>

#include "fk/cuda/pdl.cuh"

namespace fk::cuda {

bool pdl_enabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("FK_PDL");
    if (env != nullptr && std::strcmp(env, "0") == 0) return false;
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return false;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) return false;
    return major >= 9;
  }();
  return enabled;
}

}  // namespace fk::cuda
