// FLUX.1 (tiny-flux's checkpoint) on the CPU backend against diffusers: see flux_golden_check.h.
#include "models/diffusion/flux_golden_check.h"

namespace fk::models::diffusion::test {
namespace {

TEST(FluxGolden, TransformerMatchesDiffusers) { check_flux_golden(Device::cpu()); }

}  // namespace
}  // namespace fk::models::diffusion::test
