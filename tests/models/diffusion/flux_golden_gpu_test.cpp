// FLUX.1 (tiny-flux's checkpoint) on the CUDA backend against diffusers: see flux_golden_check.h.
#include "models/diffusion/flux_golden_check.h"
#include "support/test_seed.h"

namespace fk::models::diffusion::test {
namespace {

TEST(FluxGoldenGpu, TransformerMatchesDiffusers) {
  FK_REQUIRE_GPU();
  check_flux_golden(Device::cuda());
}

}  // namespace
}  // namespace fk::models::diffusion::test
