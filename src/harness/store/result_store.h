// Every evaluation result in a SQLite database: the candidate's source hash, toolchain,
// device, kernel variants and seeds with the verdict and timings, so results can be
// listed, shown and compared across runs (`fk results ...`).
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "harness/judge/eval_pipeline.h"
#include "harness/store/sqlite_db.h"

namespace fk::bench {

struct StoredRun {
  int64_t id = 0;
  std::string batch;       // one `fk kernels eval` invocation
  std::string created;     // UTC, ISO 8601
  std::string task, candidate, candidate_hash, verdict, backend, device, toolchain, message;
  std::string variants;    // the kernel variants selected (OpRegistry::active_variants(); "" = defaults)
  std::string sandbox;     // what the worker ran in (EvalResult::sandbox; "" in rows from before it)
  double speedup = 0, sol = 0;
  Json result;             // the full run JSON
};

class ResultStore {
 public:
  // Opens (creating if needed) the database; the schema is created on first use.
  explicit ResultStore(const std::filesystem::path& path);

  // Records the run with the kernel variants selected in this process now (the
  // evaluation's worker ran with the same selection).
  int64_t add(const std::string& batch, const CandidateRun& run);
  std::vector<StoredRun> list(const std::string& task_filter = "", int limit = 100);
  std::vector<StoredRun> batch(const std::string& batch_id);
  StoredRun get(int64_t id);
  std::vector<std::string> batches(int limit = 20);

  static std::filesystem::path default_path();  // $FK_RESULTS_DB or ~/.cache/fastkernels/results.db
  static std::string new_batch_id();             // UTC timestamp + random suffix

 private:
  SqliteDb db_;
};

}  // namespace fk::bench
