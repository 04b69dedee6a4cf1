// DLRM on the CPU against the outputs of a PyTorch DLRM on a tiny random checkpoint
// (models/recsys/dlrm_golden_check.h). Skips while the golden data is absent.
#include "models/recsys/dlrm_golden_check.h"

namespace fk {
namespace {

TEST(DlrmGolden, TinyMatchesPyTorchReference) {
  if (!test::dlrm_golden_present()) GTEST_SKIP() << test::dlrm_golden_missing();
  test::check_dlrm_golden(Device::cpu());
}

}  // namespace
}  // namespace fk
