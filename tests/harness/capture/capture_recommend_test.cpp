// fk capture for DLRM on the CPU backend: one forward of tiny-dlrmv2 becomes task workloads
// under the recommendation category that the task loader accepts and each op's make_case
// instantiates (the bottom and top MLPs' linears and relus, a lookup per table, the
// interaction, dlrm_top); the workload's samples are a seed's; a model that is no recommendation model
// is refused by name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "fk/op_registry.h"
#include "fk/status.h"
#include "harness/capture/capture_recommend.h"
#include "harness/judge/task.h"
#include "support/test_seed.h"

namespace fk::e2e {
namespace {

namespace fs = std::filesystem;

TEST(CaptureRecommend, SamplesAreTheSeedsAndInTheirTables) {
  const models::ModelSource src = models::resolve_model("tiny-dlrmv2");
  auto m = models::create_model_from_config(src.config_json, src.source);
  const auto& c = dynamic_cast<models::recsys::DlrmModel&>(*m).config();
  const RecommendWorkload w = recommend_workload("5x7");
  const auto a = recommend_samples(w, c, 3), b = recommend_samples(w, c, 3), other = recommend_samples(w, c, 4);
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a[4].sparse, b[4].sparse);
  EXPECT_NE(a[4].sparse, other[4].sparse);
  for (const auto& s : a) {
    EXPECT_EQ(static_cast<int64_t>(s.dense.size()), c.dense_features);
    for (size_t t = 0; t < s.sparse.size(); ++t) {
      EXPECT_EQ(s.sparse[t].size(), 7u);
      for (int64_t id : s.sparse[t]) EXPECT_TRUE(id >= 0 && id < c.table_sizes[t]) << id;
    }
  }
}

TEST(CaptureRecommend, TinyDlrmForwardBecomesRecsysTasksThatInstantiate) {
  const models::ModelSource src = models::resolve_model("tiny-dlrmv2");
  RecommendCaptureOptions o;
  o.seed = test::seed_for("CaptureRecommend");
  const RecommendWorkload w = recommend_workload("16x2");
  const CaptureResult r = capture_recommender(src, w, o);
  EXPECT_EQ(r.category, "recommendation-specialised");
  std::map<std::string, int64_t> calls;
  for (const CapturedOp& op : r.ops) calls[op.op] = op.calls;
  // 3 bottom and 5 top layers: 8 linears, a relu after each but the last; 6 tables; the
  // interaction and the top MLP are one dlrm_top call, its parts nested in it.
  EXPECT_EQ(calls["dlrm_top"], 1);
  EXPECT_EQ(calls["linear"], 8);
  EXPECT_EQ(calls["relu"], 7);
  EXPECT_EQ(calls["embedding_bag"], 6);
  EXPECT_EQ(calls["dlrm_interaction"], 1);

  const fs::path dir = fs::temp_directory_path() / concat("fk-capture-recommend-", ::getpid());
  fs::remove_all(dir);
  const auto files = write_task_files(r, "tiny-dlrmv2", w.name, dir);
  const auto tasks = bench::load_tasks(dir);
  EXPECT_EQ(tasks.size(), files.size());
  for (const bench::Task& t : tasks) {
    const OpDef& def = OpRegistry::global().def(t.op);
    EXPECT_EQ(t.category, "recommendation-specialised") << t.op;
    for (const bench::TaskWorkload& tw : t.workloads)
      EXPECT_NO_THROW(def.make_case(tw.shape, test::seed_for("CaptureRecommend") + 1)) << t.op << " "
                                                                                       << tw.shape.dump();
  }
  fs::remove_all(dir);
}

TEST(CaptureRecommend, RefusesAModelThatIsNoRecommender) {
  EXPECT_FALSE(is_recommender(models::resolve_model("tiny-yolov10")));
  try {
    capture_recommender(models::resolve_model("tiny-bge-m3"), recommend_workload("tiny"), {});
    ADD_FAILURE() << "a text encoder was captured as a recommendation model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a recommendation model"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fk::e2e
