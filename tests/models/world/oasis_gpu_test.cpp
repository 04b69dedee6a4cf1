// Oasis's DiT on the CUDA backend against the PyTorch reference: see oasis_golden_check.h.
#include "models/world/oasis_golden_check.h"
#include "support/test_seed.h"

namespace fk::models::world::test {
namespace {

TEST(OasisGoldenGpu, DiTMatchesThePyTorchReference) {
  FK_REQUIRE_GPU();
  check_oasis_golden(Device::cuda());
}

TEST(OasisGoldenGpu, RolloutMatchesThePyTorchReference) {
  FK_REQUIRE_GPU();
  check_oasis_rollout_golden(Device::cuda());
}

}  // namespace
}  // namespace fk::models::world::test
