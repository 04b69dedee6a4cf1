// fk capture for the detectors on the CPU backend: one forward of tiny-yolov10 becomes
// task workloads under the vision category that the task loader accepts and each op's
// make_case instantiates, yolov10_c2f with its conv2d parts nested in it; workload names
// parse or fail by name; a size other than the model's and a model that is no detector are
// refused by name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "fk/op_registry.h"
#include "fk/status.h"
#include "harness/capture/capture_detect.h"
#include "harness/judge/task.h"
#include "support/test_seed.h"

namespace fk::e2e {
namespace {

namespace fs = std::filesystem;

TEST(CaptureDetect, WorkloadNamesGiveTheirImages) {
  const DetectWorkload tiny = detect_workload("tiny");
  EXPECT_EQ(tiny.images, 2);
  EXPECT_EQ(tiny.size, 0);
  const DetectWorkload one = detect_workload("1x640");
  EXPECT_EQ(one.images, 1);
  EXPECT_EQ(one.size, 640);
  EXPECT_EQ(detect_workload("32x640").images, 32);
  for (const char* bad : {"", "x", "1x", "x640", "0x640", "1x0", "1x-640", "2x640x2", "640", "1X640", "1024px"})
    EXPECT_THROW(detect_workload(bad), Error) << bad;
}

TEST(CaptureDetect, OnlyYolov10IsADetector) {
  EXPECT_TRUE(is_detector(models::resolve_model("tiny-yolov10")));
  EXPECT_TRUE(is_detector(models::resolve_model("yolov10n")));
  for (const char* other : {"tiny-bge-m3", "tiny-flux", "tiny-llama"})
    EXPECT_FALSE(is_detector(models::resolve_model(other))) << other;
}

TEST(CaptureDetect, TinyYolov10ForwardBecomesVisionTasksThatInstantiate) {
  const models::ModelSource src = models::resolve_model("tiny-yolov10");
  DetectCaptureOptions o;
  o.seed = test::seed_for("CaptureDetect");
  const DetectWorkload w = detect_workload("3x64");
  const CaptureResult r = capture_detector(src, w, o);
  EXPECT_EQ(r.category, "edge-detection");
  std::map<std::string, int64_t> calls;
  std::map<std::string, double> top_level;
  for (const CapturedOp& op : r.ops) {
    calls[op.op] = op.calls;
    top_level[op.op] = op.top_level_seconds;
    for (const auto& [key, wc] : op.workloads)
      EXPECT_FALSE(wc.first.contains("untranslated")) << op.op << " was not translated";
  }
  // The n graph: C2f / C2fCIB blocks, one SPPF of three pools (into slices of one buffer:
  // no concatenation), two upsamplings, the neck's four concatenations, one box decode.
  EXPECT_GE(calls["yolov10_c2f"], 5);
  EXPECT_EQ(calls["max_pool2d"], 3);
  EXPECT_EQ(calls["upsample_nearest2d"], 2);
  EXPECT_EQ(calls["concat_channels"], 4);
  EXPECT_EQ(calls["dfl_box_decode"], 1);
  EXPECT_GT(calls["conv2d"], calls["yolov10_c2f"]);
  double sum = 0;
  for (const CapturedOp& op : r.ops) sum += op.top_level_seconds;
  EXPECT_NEAR(sum, r.total_seconds, 1e-9 + 1e-6 * r.total_seconds);
  // Some conv2d calls are the C2f blocks' parts: their time is not top-level time.
  for (const CapturedOp& op : r.ops)
    if (op.op == "conv2d") EXPECT_LT(op.top_level_seconds, op.total_seconds);

  const fs::path dir = fs::temp_directory_path() / concat("fk-capture-detect-", ::getpid());
  fs::remove_all(dir);
  const auto files = write_task_files(r, "tiny-yolov10", w.name, dir);
  const auto tasks = bench::load_tasks(dir);
  EXPECT_EQ(tasks.size(), files.size());
  bool c2f_seen = false;
  for (const bench::Task& t : tasks) {
    const OpDef& def = OpRegistry::global().def(t.op);
    EXPECT_EQ(t.category, "edge-detection") << t.op;
    EXPECT_EQ(t.level, def.level) << t.op;
    for (const bench::TaskWorkload& tw : t.workloads)
      EXPECT_NO_THROW(def.make_case(tw.shape, test::seed_for("CaptureDetect") + 1)) << t.op << " " << tw.shape.dump();
    if (t.op == "yolov10_c2f") {
      c2f_seen = true;
      EXPECT_EQ(t.level, "L3");
    }
  }
  EXPECT_TRUE(c2f_seen);
  fs::remove_all(dir);
}

TEST(CaptureDetect, RefusesAnotherSizeAndAModelThatIsNoDetector) {
  try {
    capture_detector(models::resolve_model("tiny-yolov10"), detect_workload("1x640"), {});
    FAIL() << "640-pixel images were run through a 64-pixel model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the model takes 64 x 64"), std::string::npos) << e.what();
  }
  try {
    capture_detector(models::resolve_model("tiny-bge-m3"), detect_workload("tiny"), {});
    FAIL() << "a text encoder was captured as a detector";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not an object detector"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fk::e2e
