#include <cuda_runtime.h>

#include "core/cuda/pdl_scope.h"
#include "fk/cuda/pdl.cuh"

namespace fk::cuda {
namespace {

// Programmatic dependent launch needs compute capability 9.0 (read once per process).
bool device_supports_pdl() {
  static const bool supported = [] {
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return false;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) return false;
    return major >= 9;
  }();
  return supported;
}

// Set by PdlOffScope while an op whose variant no_pdl is selected launches.
thread_local bool pdl_off_here = false;

}  // namespace

// Per launch rather than per process, so that one process can compare an op with and
// without PDL (its variant no_pdl, ops/common/pdl_variant.h).
bool pdl_enabled() { return !pdl_off_here && device_supports_pdl(); }

PdlOffScope::PdlOffScope(bool off) : previous_(pdl_off_here) { pdl_off_here = previous_ || off; }

PdlOffScope::~PdlOffScope() { pdl_off_here = previous_; }

}  // namespace fk::cuda
