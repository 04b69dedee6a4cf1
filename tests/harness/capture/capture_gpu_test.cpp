// fk capture on the GPU: op time comes from the kernel trace (the kernels' own durations,
// attributed to the op call they ran in), not from wall clock around synchronised calls.
#include <gtest/gtest.h>

#include <string>

#include "harness/capture/capture.h"
#include "support/test_seed.h"

namespace fk::e2e {
namespace {

TEST(CaptureGpu, OpTimeIsKernelTimeOfEveryCall) {
  FK_REQUIRE_GPU();
  engine::EngineConfig c;
  c.model = std::string(FK_SOURCE_DIR) + "/tests/data/models/llama";
  c.backend = DeviceType::cuda;
  c.num_pages = 128;
  c.max_num_batched_tokens = 64;
  const CaptureResult r = capture_workload(c, workload_spec("tiny"));
  ASSERT_EQ(r.time_source, "kernel trace");
  ASSERT_FALSE(r.ops.empty());
  double sum = 0;
  for (const CapturedOp& op : r.ops) {
    SCOPED_TRACE(op.op);
    // Every op launches kernels; their time is below the wall time of the synchronised
    // calls, which also holds the launches and the synchronisations.
    EXPECT_GT(op.total_seconds, 0.0);
    EXPECT_LT(op.total_seconds, op.total_wall_seconds);
    double shapes = 0;
    for (const auto& [key, s] : op.seconds) {
      EXPECT_GT(s, 0.0) << key;
      shapes += s;
    }
    EXPECT_NEAR(shapes, op.total_seconds, 1e-9 + 1e-6 * op.total_seconds);
    sum += op.top_level_seconds;  // a layer op's parts are nested in it: counted once
  }
  EXPECT_NEAR(sum, r.total_seconds, 1e-9 + 1e-6 * sum);
  EXPECT_EQ(r.to_json().at("time_source"), "kernel trace");
}

}  // namespace
}  // namespace fk::e2e
