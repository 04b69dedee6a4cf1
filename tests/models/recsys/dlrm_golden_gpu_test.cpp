// DLRM on CUDA against the outputs of a PyTorch DLRM on a tiny random checkpoint: the same
// check as the CPU test (models/recsys/dlrm_golden_check.h), every op on its CUDA baseline.
// Skips without a device, and while the golden data is absent.
#include "models/recsys/dlrm_golden_check.h"
#include "support/test_seed.h"

namespace fk {
namespace {

TEST(DlrmGoldenGpu, TinyMatchesPyTorchReference) {
  FK_REQUIRE_GPU();
  if (!test::dlrm_golden_present()) GTEST_SKIP() << test::dlrm_golden_missing();
  test::check_dlrm_golden(Device::cuda());
}

}  // namespace
}  // namespace fk
