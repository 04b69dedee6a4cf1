// fk capture of FLUX.1 and of a detector on the GPU: op time from the kernel trace, every
// op's calls timed, the L3 blocks' parts nested in them (their time counted once).
#include <gtest/gtest.h>

#include "harness/capture/capture_denoise.h"
#include "harness/capture/capture_detect.h"
#include "support/test_seed.h"

namespace fk::e2e {
namespace {

void expect_kernel_time(const CaptureResult& r) {
  ASSERT_EQ(r.time_source, "kernel trace");
  ASSERT_FALSE(r.ops.empty());
  double sum = 0;
  for (const CapturedOp& op : r.ops) {
    SCOPED_TRACE(op.op);
    EXPECT_GT(op.total_seconds, 0.0);
    EXPECT_LT(op.total_seconds, op.total_wall_seconds);
    sum += op.top_level_seconds;
  }
  EXPECT_NEAR(sum, r.total_seconds, 1e-9 + 1e-6 * sum);
}

TEST(CaptureImageGpu, TinyFluxStepIsKernelTime) {
  FK_REQUIRE_GPU();
  DenoiseCaptureOptions o;
  o.backend = DeviceType::cuda;
  o.seed = test::seed_for("CaptureImageGpu");
  const CaptureResult r = capture_denoise(models::resolve_model("tiny-flux"), denoise_workload("2x64px"), o);
  expect_kernel_time(r);
  for (const CapturedOp& op : r.ops)
    if (op.op == "flux_double_block" || op.op == "flux_single_block") {
      EXPECT_EQ(op.calls, 2) << op.op;
      EXPECT_EQ(op.top_level_seconds, op.total_seconds) << op.op;  // no block nests in another
    } else if (op.op == "varlen_attention") {
      EXPECT_EQ(op.top_level_seconds, 0.0);  // every attention is a block's part
    }
}

TEST(CaptureImageGpu, Yolov10nForwardIsKernelTime) {
  FK_REQUIRE_GPU();
  DetectCaptureOptions o;
  o.backend = DeviceType::cuda;
  o.seed = test::seed_for("CaptureImageGpu", 1);
  const CaptureResult r = capture_detector(models::resolve_model("yolov10n"), detect_workload("1x640"), o);
  expect_kernel_time(r);
  bool c2f = false;
  for (const CapturedOp& op : r.ops)
    if (op.op == "yolov10_c2f") {
      c2f = true;
      EXPECT_GT(op.calls, 0);
    }
  EXPECT_TRUE(c2f);
}

}  // namespace
}  // namespace fk::e2e
