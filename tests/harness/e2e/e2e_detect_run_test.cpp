// The detector end-to-end run on the CPU backend (tiny-yolov10, 3 images): the baseline
// writes its raw head output, boxes and scores and a second baseline run agrees exactly,
// every detection selected again; an upsampling that rounds the worst honest way stays
// well within the bounds (printed: the measurement they rest on); a wrong upsampling in the
// registry is INCORRECT; the comparison's verdicts and speedup; bad models and sizes
// refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/conv.h"
#include "fk/status.h"
#include "harness/e2e/e2e_detect_run.h"
#include "support/test_seed.h"

namespace fk::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct TeacherFile {
  fs::path path = fs::temp_directory_path() / concat("fk-e2e-detect-", ::getpid(), ".safetensors");
  ~TeacherFile() { fs::remove(path); }
};

DetectRunOptions tiny(uint64_t seed) {
  DetectRunOptions o;
  o.model = "tiny-yolov10";
  o.workload = "3x64";
  o.iters = 1;
  o.seed = seed;
  return o;
}

// Nearest upsampling whose source pixel is `shift` rows further down (clamped), each value
// scaled by `factor` (1 + one f16 unit in the last place: an honest kernel's worst
// rounding; 1 and a shift of 1: the wrong pixel).
template <int Shift, int UlpsUp>
fk_status upsample(const void* raw, void*) {
  const auto& a = *static_cast<const ops::UpsampleNearest2dArgs*>(raw);
  const int64_t n = a.out.shape[0], oh = a.out.shape[1], ow = a.out.shape[2], c = a.out.shape[3];
  const int64_t ih = a.input.shape[1];
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x)
        for (int64_t k = 0; k < c; ++k) {
          const int64_t sy = std::min<int64_t>(y / a.scale_h + Shift, ih - 1), sx = x / a.scale_w;
          double v = load_element(a.input.element_ptr(b * a.input.strides[0] + sy * a.input.strides[1] +
                                                       sx * a.input.strides[2] + k * a.input.strides[3]),
                                  a.input.dtype);
          if (UlpsUp) v *= 1 + std::ldexp(1.0, -10);  // f16 keeps 10 fraction bits
          store_element(a.out.element_ptr(b * a.out.strides[0] + y * a.out.strides[1] + x * a.out.strides[2] +
                                          k * a.out.strides[3]),
                        a.out.dtype, v);
        }
  return FK_OK;
}

std::pair<json, json> baseline_and_with_upsample(fk_op_fn up, uint64_t seed, const fs::path& teacher) {
  DetectRunOptions o = tiny(seed);
  o.teacher_out = teacher;
  const json base = run_detect_workload(o);
  o.teacher_out.clear();
  o.teacher_in = teacher;
  OpRegistry::global().install("upsample_nearest2d", DeviceType::cpu, up, "test upsample");
  struct Reset {
    ~Reset() { OpRegistry::global().reset("upsample_nearest2d", DeviceType::cpu); }
  } reset;
  return {base, run_detect_workload(o)};
}

TEST(E2eDetectRun, ASecondBaselineRunAgreesExactly) {
  const TeacherFile teacher;
  const auto [base, again] = baseline_and_with_upsample(upsample<0, 0>, test::seed_for("E2eDetectRun"), teacher.path);
  EXPECT_EQ(base.at("pattern"), "detect");
  EXPECT_EQ(base.at("images"), 3);
  EXPECT_GT(base.at("elapsed_s").get<double>(), 0);
  EXPECT_EQ(again.at("outputs"), base.at("outputs"));
  const json& g = again.at("agreement");
  EXPECT_EQ(g.at("values"), 3 * 84 * (64 + 8));  // 84 anchors of 4 x 16 DFL + 8 class logits
  EXPECT_EQ(g.at("raw_rel_err").get<double>(), 0.0);
  EXPECT_EQ(g.at("boxes_max_abs_err").get<double>(), 0.0);
  EXPECT_EQ(g.at("scores_max_abs_err").get<double>(), 0.0);
  EXPECT_EQ(g.at("detection_agreement").get<double>(), 1.0);
  EXPECT_GT(g.at("detections").get<int64_t>(), 0);
  EXPECT_EQ(compare_detect_runs(base, again).at("verdict"), "PASSED");
}

TEST(E2eDetectRun, AnHonestRoundingStaysWellWithinTheBounds) {
  const TeacherFile teacher;
  const auto [base, cand] = baseline_and_with_upsample(upsample<0, 1>, test::seed_for("E2eDetectRun", 1), teacher.path);
  const json& g = cand.at("agreement");
  std::printf("[ e2e    ] tiny-yolov10, upsampling one f16 unit up: raw relative L2 %.4g, detections kept %.4g\n",
              g.at("raw_rel_err").get<double>(), g.at("detection_agreement").get<double>());
  EXPECT_GT(g.at("raw_rel_err").get<double>(), 0.0);
  EXPECT_LT(g.at("raw_rel_err").get<double>(), kMaxRawRelErr / 3);
  EXPECT_GE(g.at("detection_agreement").get<double>(), kMinDetectionAgreement);
  EXPECT_EQ(compare_detect_runs(base, cand).at("verdict"), "PASSED");
}

TEST(E2eDetectRun, AWrongUpsamplingIsIncorrect) {
  const TeacherFile teacher;
  const auto [base, wrong] = baseline_and_with_upsample(upsample<1, 0>, test::seed_for("E2eDetectRun", 2), teacher.path);
  const json& g = wrong.at("agreement");
  EXPECT_GT(g.at("raw_rel_err").get<double>(), kMaxRawRelErr) << g.dump();
  const json cmp = compare_detect_runs(base, wrong);
  EXPECT_EQ(cmp.at("verdict"), "INCORRECT");
  EXPECT_NE(cmp.at("reason").get<std::string>().find("raw output"), std::string::npos) << cmp.dump();
}

TEST(E2eDetectRun, ComparisonVerdictsAndSpeedup) {
  const json base = {{"pattern", "detect"}, {"elapsed_s", 3.0}, {"images_per_s", 1.0}};
  json cand = {{"pattern", "detect"}, {"elapsed_s", 1.5}, {"images_per_s", 2.0},
               {"agreement", {{"values", 10}, {"raw_rel_err", 0.001}, {"detection_agreement", 0.95}}}};
  json cmp = compare_detect_runs(base, cand);
  EXPECT_EQ(cmp.at("verdict"), "PASSED");
  EXPECT_DOUBLE_EQ(cmp.at("speedup").at("throughput").get<double>(), 2.0);
  cand["agreement"]["detection_agreement"] = 0.5;
  cmp = compare_detect_runs(base, cand);
  EXPECT_EQ(cmp.at("verdict"), "INCORRECT");
  EXPECT_NE(cmp.at("reason").get<std::string>().find("detections"), std::string::npos);
  cand["agreement"]["detection_agreement"] = 1.0;
  cand["agreement"]["raw_rel_err"] = nullptr;  // a NaN, as the run's JSON stores it
  EXPECT_EQ(compare_detect_runs(base, cand).at("verdict"), "INCORRECT");
  cand.erase("agreement");
  EXPECT_EQ(compare_detect_runs(base, cand).at("reason"), "no outputs were compared");
}

TEST(E2eDetectRun, RefusesOtherModelsAndSizes) {
  DetectRunOptions o = tiny(1);
  o.model = "tiny-flux";
  try {
    run_detect_workload(o);
    FAIL() << "a FLUX transformer ran as a detector";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not an object detector"), std::string::npos) << e.what();
  }
  o = tiny(1);
  o.workload = "1x640";
  try {
    run_detect_workload(o);
    FAIL() << "640-pixel images ran through a 64-pixel model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the model takes 64 x 64"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fk::e2e
