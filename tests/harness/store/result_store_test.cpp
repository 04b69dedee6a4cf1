#include "harness/store/result_store.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "fk/op_registry.h"
#include "harness/store/sqlite_db.h"

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
    run.result.sandbox = "none: disabled by FK_SANDBOX=off";
    const int64_t id = store.add("batch-a", run);
    run.result.verdict = Verdict::INCORRECT;
    store.add("batch-b", run);
    const StoredRun got = store.get(id);
    EXPECT_EQ(got.verdict, "PASSED");
    EXPECT_DOUBLE_EQ(got.speedup, 1.25);
    EXPECT_EQ(got.result["secret_seed"], 99u);
    EXPECT_EQ(got.sandbox, "none: disabled by FK_SANDBOX=off");  // what the worker ran in, column and JSON
    EXPECT_EQ(got.result["sandbox"], "none: disabled by FK_SANDBOX=off");
    EXPECT_EQ(store.list().size(), 2u);
    EXPECT_EQ(store.batch("batch-b").size(), 1u);
    EXPECT_EQ(store.batches().front(), "batch-b");
    EXPECT_THROW(store.get(12345), Error);
  }
  std::filesystem::remove(path);
}

std::filesystem::path fresh_db(const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(getpid()) + ".db");
  std::filesystem::remove(path);
  return path;
}

CandidateRun passed_run() {
  CandidateRun run;
  run.task = "linear";
  run.candidate = "baseline";
  run.result.task = "linear";
  run.result.verdict = Verdict::PASSED;
  run.result.speedup = 1.0;
  return run;
}

// Each run records the kernel variants selected when it was stored: they change the
// baseline it was timed against.
TEST(ResultStore, RecordsTheSelectedVariants) {
  const auto path = fresh_db("fk-store-variants");
  {
    ResultStore store(path);
    OpRegistry::global().select_variants("linear", {});
    const int64_t plain = store.add("b", passed_run());
    OpRegistry::global().select_variants("linear", {"no_skinny", "no_autotune"});
    const int64_t varied = store.add("b", passed_run());
    OpRegistry::global().select_variants("linear", {});
    EXPECT_EQ(store.get(plain).variants, "");
    EXPECT_EQ(store.get(varied).variants, "linear=no_autotune+no_skinny");
    EXPECT_EQ(store.list().front().variants, "linear=no_autotune+no_skinny");
  }
  std::filesystem::remove(path);
}

// A database whose runs table predates the variants column gains it on open; its rows read
// as run on the defaults, and new rows record theirs.
TEST(ResultStore, MigratesARunsTableWithoutTheVariantsColumn) {
  const auto path = fresh_db("fk-store-migrate");
  {
    SqliteDb old(path);
    old.exec(
        "CREATE TABLE runs ("
        " id INTEGER PRIMARY KEY AUTOINCREMENT, batch TEXT NOT NULL, created TEXT NOT NULL, task TEXT NOT NULL,"
        " candidate TEXT, candidate_hash TEXT, verdict TEXT NOT NULL, backend TEXT, device TEXT, toolchain TEXT,"
        " message TEXT, speedup REAL, sol REAL, seeds TEXT, secret_seed TEXT, result TEXT NOT NULL);"
        "INSERT INTO runs (batch, created, task, verdict, speedup, result) VALUES"
        " ('old', '2025-01-01T00:00:00Z', 'rms_norm', 'PASSED', 1.5, '{}');");
  }
  {
    ResultStore store(path);
    const auto rows = store.list();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].variants, "");
    EXPECT_DOUBLE_EQ(rows[0].speedup, 1.5);
    OpRegistry::global().select_variants("linear", {"no_small_m"});
    const int64_t id = store.add("new", passed_run());
    OpRegistry::global().select_variants("linear", {});
    EXPECT_EQ(store.get(id).variants, "linear=no_small_m");
  }
  EXPECT_EQ(ResultStore(path).list().size(), 2u);  // reopening migrates nothing twice
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace fk::bench
