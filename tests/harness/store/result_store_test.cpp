#include "harness/store/result_store.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

namespace fk::bench {
namespace {

TEST(ResultStore, AddListGetAndBatch) {
  const auto path = std::filesystem::temp_directory_path() / ("fk-store-test-" + std::to_string(getpid()) + ".db");
  std::filesystem::remove(path);
  {
    ResultStore store(path);
    CandidateRun run;
    run.task = "rms_norm";
    run.candidate = "cand.cu";
    run.result.task = "rms_norm";
    run.result.verdict = Verdict::PASSED;
    run.result.speedup = 1.25;
    run.result.seeds = {1, 2, 3};
    run.result.secret_seed = 99;
    const int64_t id = store.add("batch-a", run);
    run.result.verdict = Verdict::INCORRECT;
    store.add("batch-b", run);
    const StoredRun got = store.get(id);
    EXPECT_EQ(got.verdict, "PASSED");
    EXPECT_DOUBLE_EQ(got.speedup, 1.25);
    EXPECT_EQ(got.result["secret_seed"], 99u);
    EXPECT_EQ(store.list().size(), 2u);
    EXPECT_EQ(store.batch("batch-b").size(), 1u);
    EXPECT_EQ(store.batches().front(), "batch-b");
    EXPECT_THROW(store.get(12345), Error);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace fk::bench
