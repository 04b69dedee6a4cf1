// The e2e_runs table: a report stored and read back field by field (absent figures as
// NULL), selection by model and batch, and a database from before the table existed.
#include "harness/e2e/e2e_store.h"

#include <gtest/gtest.h>

#include "harness/store/result_store.h"
#include "harness/store/sqlite_db.h"
#include "harness/e2e/e2e_test_reports.h"
#include "fk/status.h"

namespace fk::e2e {
namespace {

TEST(E2eStore, StoresAndReadsBackARun) {
  test::TempDb db("fk-e2e-store");
  E2eStore store(db.path);
  const auto rep = test::report("tiny-llama", "dense-llm", "PASSED", 1.5, 1.25, {"silu_and_mul", "rms_norm"});
  const int64_t id = store.add("batch-a", record_of_report(rep));
  const auto runs = store.list();
  ASSERT_EQ(runs.size(), 1u);
  const E2eRecord& r = runs[0];
  EXPECT_EQ(r.id, id);
  EXPECT_EQ(r.batch, "batch-a");
  EXPECT_FALSE(r.created.empty());
  EXPECT_EQ(r.model, "tiny-llama");
  EXPECT_EQ(r.category, "dense-llm");
  EXPECT_EQ(r.workload, "tiny");
  EXPECT_EQ(r.backend, "cpu");
  EXPECT_EQ(r.candidate_set(), "rms_norm+silu_and_mul");  // sorted: the same set however listed
  EXPECT_EQ(r.candidates[0].level, "L1");
  EXPECT_EQ(r.verdict, "PASSED");
  EXPECT_DOUBLE_EQ(*r.throughput_speedup, 1.5);
  EXPECT_DOUBLE_EQ(*r.latency_speedup, 1.25);
  EXPECT_DOUBLE_EQ(*r.exact_match_rate, 0.75);
  EXPECT_EQ(*r.first_divergence, 7);
  EXPECT_DOUBLE_EQ(*r.max_logit_err, 0.0125);
  EXPECT_DOUBLE_EQ(*r.kl, 2.5e-4);
  EXPECT_EQ(r.report, rep);
}

TEST(E2eStore, ARunThatNeverFinishedHasNoFigures) {
  test::TempDb db("fk-e2e-store-null");
  E2eStore store(db.path);
  store.add("b", record_of_report(test::report("tiny-llama", "dense-llm", "RUNTIME_ERROR", 0, 0)));
  const E2eRecord r = store.list().at(0);
  EXPECT_EQ(r.verdict, "RUNTIME_ERROR");
  EXPECT_EQ(r.reason, "worker exited with code 1: boom");
  EXPECT_FALSE(r.throughput_speedup || r.latency_speedup || r.exact_match_rate || r.first_divergence ||
               r.max_logit_err || r.kl);
  EXPECT_TRUE(to_json(r)["kl"].is_null());
}

TEST(E2eStore, SelectsByModelAndBatch) {
  test::TempDb db("fk-e2e-store-select");
  E2eStore store(db.path);
  store.add("b1", record_of_report(test::report("tiny-llama", "dense-llm", "PASSED", 1, 1)));
  store.add("b1", record_of_report(test::report("tiny-olmoe", "moe-llm", "PASSED", 1, 1)));
  store.add("b2", record_of_report(test::report("tiny-llama", "dense-llm", "INCORRECT", 1, 1)));
  EXPECT_EQ(store.list().size(), 3u);
  EXPECT_EQ(store.list("tiny-llama").size(), 2u);
  EXPECT_EQ(store.batch("b1").size(), 2u);
  EXPECT_TRUE(store.batch("nope").empty());
  EXPECT_EQ(store.models(), (std::vector<std::string>{"tiny-llama", "tiny-olmoe"}));
}

TEST(E2eStore, ReportWithoutARequiredFieldIsRejected) {
  auto rep = test::report("tiny-llama", "dense-llm", "PASSED", 1, 1);
  rep.erase("category");
  try {
    record_of_report(rep);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'category'"), std::string::npos) << e.what();
  }
}

// A database written before e2e runs were stored holds only the op-level table: opening it
// adds e2e_runs and leaves the old rows as they were.
TEST(E2eStore, OpensADatabaseFromBeforeTheTable) {
  test::TempDb db("fk-e2e-store-old");
  {
    bench::SqliteDb old(db.path);
    old.exec(
        "CREATE TABLE runs ("
        " id INTEGER PRIMARY KEY AUTOINCREMENT, batch TEXT NOT NULL, created TEXT NOT NULL, task TEXT NOT NULL,"
        " candidate TEXT, candidate_hash TEXT, verdict TEXT NOT NULL, backend TEXT, device TEXT, toolchain TEXT,"
        " message TEXT, speedup REAL, sol REAL, seeds TEXT, secret_seed TEXT, result TEXT NOT NULL);"
        "CREATE INDEX runs_task ON runs(task);"
        "CREATE INDEX runs_batch ON runs(batch);"
        "INSERT INTO runs (batch, created, task, verdict, speedup, result) VALUES"
        " ('old', '2025-01-01T00:00:00Z', 'rms_norm', 'PASSED', 1.5, '{\"task\":\"rms_norm\"}');");
  }
  {
    E2eStore store(db.path);
    EXPECT_TRUE(store.list().empty());
    store.add("new", record_of_report(test::report("tiny-llama", "dense-llm", "PASSED", 2, 2)));
  }
  bench::ResultStore runs(db.path);
  const auto old_rows = runs.list();
  ASSERT_EQ(old_rows.size(), 1u);
  EXPECT_EQ(old_rows[0].batch, "old");
  EXPECT_DOUBLE_EQ(old_rows[0].speedup, 1.5);
  EXPECT_EQ(old_rows[0].result["task"], "rms_norm");
  EXPECT_EQ(E2eStore(db.path).list().size(), 1u);  // and reopening keeps the e2e run
}

// The kernel variants both runs took (the report's "variants") are stored with the run; a
// report without them ran the defaults.
TEST(E2eStore, StoresTheReportsVariants) {
  test::TempDb db("fk-e2e-store-variants");
  E2eStore store(db.path);
  auto rep = test::report("tiny-llama", "dense-llm", "PASSED", 1.5, 1.25);
  rep["variants"] = "linear=no_autotune,rms_norm=late_weight";
  store.add("a", record_of_report(rep));
  store.add("b", record_of_report(test::report("tiny-llama", "dense-llm", "PASSED", 1.5, 1.25)));
  const auto runs = store.list();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].variants, "linear=no_autotune,rms_norm=late_weight");
  EXPECT_EQ(to_json(runs[0])["variants"], "linear=no_autotune,rms_norm=late_weight");
  EXPECT_EQ(runs[1].variants, "");
}

// An e2e_runs table from before the variants column gains it on open.
TEST(E2eStore, MigratesATableWithoutTheVariantsColumn) {
  test::TempDb db("fk-e2e-store-migrate");
  {
    bench::SqliteDb old(db.path);
    old.exec(
        "CREATE TABLE e2e_runs ("
        " id INTEGER PRIMARY KEY AUTOINCREMENT, batch TEXT NOT NULL, created TEXT NOT NULL, model TEXT NOT NULL,"
        " category TEXT NOT NULL, workload TEXT NOT NULL, backend TEXT, candidate_set TEXT NOT NULL,"
        " candidates TEXT NOT NULL, verdict TEXT NOT NULL, reason TEXT, throughput_speedup REAL,"
        " latency_speedup REAL, exact_match_rate REAL, first_divergence INTEGER, max_logit_err REAL, kl REAL,"
        " report TEXT NOT NULL);"
        "INSERT INTO e2e_runs (batch, created, model, category, workload, candidate_set, candidates, verdict, report)"
        " VALUES ('old', '2025-01-01T00:00:00Z', 'tiny-llama', 'dense-llm', 'tiny', 'rms_norm', '[]', 'PASSED', '{}');");
  }
  E2eStore store(db.path);
  auto rep = test::report("tiny-llama", "dense-llm", "PASSED", 2, 2);
  rep["variants"] = "sample=max_cluster_1";
  store.add("new", record_of_report(rep));
  const auto runs = store.list();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].batch, "old");
  EXPECT_EQ(runs[0].variants, "");
  EXPECT_EQ(runs[1].variants, "sample=max_cluster_1");
}

TEST(E2eStore, UnopenablePathNamesIt) {
  const std::string bad = "/proc/fk-no-such-dir/results.db";
  try {
    E2eStore store(bad);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fk::e2e
