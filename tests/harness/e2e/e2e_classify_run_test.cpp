// The image classifier end-to-end run on the CPU backend (tiny-mobilenetv4, f16): a second
// baseline run agrees exactly; a global_avg_pool whose every output is one f16 unit in the
// last place up stays well within the bounds (printed: the measurement they rest on); one
// that drops a pixel is INCORRECT; the comparison's verdicts; bad workloads refused; fk
// capture's forward of the same workload, and of tiny-convnextv2's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/conv.h"
#include "fk/status.h"
#include "harness/e2e/e2e_classify_run.h"
#include "models/registry.h"

namespace fk::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct TeacherFile {
  fs::path path = fs::temp_directory_path() / concat("fk-e2e-classify-", ::getpid(), ".safetensors");
  ~TeacherFile() { fs::remove(path); }
};

// The channel means over all pixels but the last `Drop`, scaled UlpsUp f16 units up.
template <int Drop, int UlpsUp>
fk_status pool(const void* raw, void*) {
  const auto& a = *static_cast<const ops::GlobalAvgPoolArgs*>(raw);
  const int64_t n_img = a.input.shape[0], h = a.input.shape[1], w = a.input.shape[2], c = a.input.shape[3];
  for (int64_t n = 0; n < n_img; ++n)
    for (int64_t k = 0; k < c; ++k) {
      double s = 0;
      for (int64_t p = 0; p < h * w - Drop; ++p)
        s += load_element(a.input.element_ptr(n * a.input.strides[0] + (p / w) * a.input.strides[1] +
                                              (p % w) * a.input.strides[2] + k),
                          a.input.dtype);
      const double mean = s / static_cast<double>(h * w) * (1 + UlpsUp * std::ldexp(1.0, -10));
      store_element(a.out.element_ptr(n * a.out.strides[0] + k), a.out.dtype, mean);
    }
  return FK_OK;
}

std::pair<json, json> baseline_and_with_pool(fk_op_fn fn, const fs::path& teacher) {
  ClassifyRunOptions o;
  o.model = "tiny-mobilenetv4";
  o.workload = "4x64";
  o.iters = 1;
  o.teacher_out = teacher;
  const json base = run_classify_workload(o);
  o.teacher_out.clear();
  o.teacher_in = teacher;
  OpRegistry::global().install("global_avg_pool", DeviceType::cpu, fn, "test pool");
  struct Reset {
    ~Reset() { OpRegistry::global().reset("global_avg_pool", DeviceType::cpu); }
  } reset;
  return {base, run_classify_workload(o)};
}

TEST(E2eClassifyRun, ASecondBaselineRunAgreesExactly) {
  const TeacherFile teacher;
  const auto [base, again] = baseline_and_with_pool(pool<0, 0>, teacher.path);
  EXPECT_EQ(base.at("pattern"), "classify");
  EXPECT_EQ(base.at("images"), 4);
  EXPECT_EQ(again.at("outputs"), base.at("outputs"));
  EXPECT_EQ(again.at("agreement").at("logits_rel_err").get<double>(), 0.0);
  EXPECT_EQ(compare_classify_runs(base, again).at("verdict"), "PASSED");
}

TEST(E2eClassifyRun, AnHonestRoundingStaysWellWithinTheBounds) {
  const TeacherFile teacher;
  const auto [base, cand] = baseline_and_with_pool(pool<0, 1>, teacher.path);
  const json& g = cand.at("agreement");
  std::printf("[ e2e    ] tiny-mobilenetv4, pool one f16 unit up: logits relative L2 %.4g, top-1 kept %.4g\n",
              g.at("logits_rel_err").get<double>(), g.at("top1_agreement").get<double>());
  EXPECT_LT(g.at("logits_rel_err").get<double>(), kMaxClassifyLogitsRelErr / 3);
  EXPECT_EQ(compare_classify_runs(base, cand).at("verdict"), "PASSED");
}

TEST(E2eClassifyRun, APoolThatDropsAPixelIsIncorrect) {
  const TeacherFile teacher;
  const auto [base, wrong] = baseline_and_with_pool(pool<1, 0>, teacher.path);
  const json cmp = compare_classify_runs(base, wrong);
  EXPECT_EQ(cmp.at("verdict"), "INCORRECT") << cmp.dump();
}

TEST(E2eClassifyRun, ComparisonVerdictsAndRefusals) {
  const json base = {{"pattern", "classify"}, {"elapsed_s", 2.0}, {"images_per_s", 1.0}};
  json cand = {{"pattern", "classify"}, {"elapsed_s", 1.0}, {"images_per_s", 2.0},
               {"agreement", {{"values", 40}, {"logits_rel_err", 0.001}, {"top1_agreement", 1.0}}}};
  EXPECT_EQ(compare_classify_runs(base, cand).at("verdict"), "PASSED");
  cand["agreement"]["top1_agreement"] = 0.5;
  EXPECT_NE(compare_classify_runs(base, cand).at("reason").get<std::string>().find("top class"), std::string::npos);
  cand.erase("agreement");
  EXPECT_EQ(compare_classify_runs(base, cand).at("reason"), "no outputs were compared");
  EXPECT_EQ(classify_workload("256x224").images, 256);
  EXPECT_EQ(classify_workload("256x224").size, 224);
  for (const char* bad : {"x224", "2x", "0x64", "2x0", "2y64"}) EXPECT_THROW(classify_workload(bad), Error) << bad;
  EXPECT_TRUE(is_classifier(models::resolve_model("tiny-mobilenetv4")));
  EXPECT_TRUE(is_classifier(models::resolve_model("tiny-convnextv2")));
  EXPECT_FALSE(is_classifier(models::resolve_model("tiny-yolov10")));
}

TEST(E2eClassifyRun, CaptureRecordsTheForward) {
  const CaptureResult r =
      capture_classifier(models::resolve_model("tiny-mobilenetv4"), classify_workload("2x64"), {});
  std::map<std::string, int64_t> calls;
  for (const CapturedOp& op : r.ops) calls[op.op] = op.calls;
  EXPECT_EQ(r.category, "edge-detection");
  EXPECT_EQ(calls["global_avg_pool"], 1);
  EXPECT_EQ(calls["linear"], 1);
  EXPECT_GT(calls["conv2d"], 20);
}

// ConvNeXt V2's forward: its blocks as convnextv2_block calls, and every op call inside them
// counted too (a capture records the L3 op and its parts), beside the stem's and the
// downsamplings' conv2d and the head.
TEST(E2eClassifyRun, CaptureRecordsConvNextV2sBlocks) {
  const CaptureResult r = capture_classifier(models::resolve_model("tiny-convnextv2"), classify_workload("2x64"), {});
  std::map<std::string, int64_t> calls;
  for (const CapturedOp& op : r.ops) calls[op.op] = op.calls;
  EXPECT_EQ(calls["convnextv2_block"], 5);  // depths 1-1-2-1
  EXPECT_EQ(calls["grn"], 5);
  EXPECT_EQ(calls["conv2d"], 4 + 5);      // the patch conv and three downsamplings, a depthwise one per block
  EXPECT_EQ(calls["linear"], 1 + 2 * 5);  // the classifier, two per block
  EXPECT_EQ(calls["global_avg_pool"], 1);
}

}  // namespace
}  // namespace fk::e2e
