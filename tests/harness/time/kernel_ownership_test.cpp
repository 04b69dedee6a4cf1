#include "harness/time/kernel_ownership.h"

#include <gtest/gtest.h>

namespace fk::bench {
namespace {

// Kernels in the candidate's windows that its library does not define are reported once
// each; its own kernels, the baseline's windows and copies are not.
TEST(KernelOwnership, ForeignKernelsInTheCandidatesCallsOnly) {
  const std::vector<CallWindow> windows = {{100, 200, true}, {300, 400, false}, {500, 600, true}};
  std::vector<KernelRecord> records = {
      {"_Z4minev", 7, 110, 150},                      // its own
      {"nvjet_sm90_tst_256x152", 7, 150, 190},         // a library's, in its call
      {"nvjet_sm90_tst_256x152", 7, 510, 590},         // again: reported once
      {"_ZN2fk3ops11rms_norm_kerEv", 7, 310, 390},     // the baseline's, in the baseline's call
      {"_ZN2fk3ops9fill_kernEv", 7, 250, 260},         // the harness's, between calls
      {"memcpy DtoD 4096 bytes", 7, 520, 530, TraceKind::memcpy},
      {"cutlass_kernel", 7, 600, 610},                 // starts at the window's end: inside
  };
  EXPECT_EQ(kernels_not_its_own(records, windows, {"_Z4minev"}),
            (std::vector<std::string>{"cutlass_kernel", "nvjet_sm90_tst_256x152"}));
  EXPECT_TRUE(kernels_not_its_own(records, windows, {"_Z4minev", "cutlass_kernel", "nvjet_sm90_tst_256x152"}).empty());
  EXPECT_TRUE(kernels_not_its_own(records, {}, {}).empty());
}

}  // namespace
}  // namespace fk::bench
