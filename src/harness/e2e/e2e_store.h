// Every `fk e2e eval` in the results database, in a table of its own (e2e_runs) beside the
// op-level runs, so one file holds both and databases from before it keep working: the
// model and its category, the workload, the candidate ops with their task levels, the
// verdict and the figures the roll-up reads, and the full report JSON.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/store/sqlite_db.h"

namespace fk::e2e {

struct E2eCandidate {
  std::string op;
  std::string level;  // the level of the op's task ("L1"...); "" when no task file names the op
};

struct E2eRecord {
  int64_t id = 0;
  std::string batch, created;  // created: UTC, ISO 8601
  std::string model, category, workload, backend;
  std::string variants;  // the kernel variants both runs used (the report's "variants"; "" = defaults)
  std::vector<E2eCandidate> candidates;  // sorted by op
  std::string verdict, reason;
  // Figures of the comparison; absent when the candidate run never finished (compile or
  // runtime error, timeout).
  std::optional<double> throughput_speedup, latency_speedup, exact_match_rate, max_logit_err, kl;
  std::optional<int64_t> first_divergence;  // earliest diverging token over all requests; -1: none diverged
  nlohmann::json report;                    // what `fk e2e eval` printed

  bool passed() const { return verdict == "PASSED"; }
  // "op_a+op_b": which kernels were swapped in; the roll-up's latest run is per model ×
  // workload × candidate set, so a new version of the same candidates replaces the old.
  std::string candidate_set() const;
};

// The record of an `fk e2e eval` report (throws naming the missing field).
E2eRecord record_of_report(const nlohmann::json& report);
// The record's columns as JSON (the report left out: `with_report` adds it).
nlohmann::json to_json(const E2eRecord& r, bool with_report = false);

class E2eStore {
 public:
  // Opens (creating if needed) the database and adds the e2e_runs table when it is missing.
  explicit E2eStore(const std::filesystem::path& path);

  int64_t add(const std::string& batch, const E2eRecord& record);  // sets created
  std::vector<E2eRecord> list(const std::string& model = "");      // oldest first; "" = every model
  std::vector<E2eRecord> batch(const std::string& batch_id);       // oldest first
  std::vector<std::string> models();                               // the model ids stored
  const std::filesystem::path& path() const { return db_.path(); }

 private:
  std::vector<E2eRecord> select(const std::string& where, const std::string& value);
  bench::SqliteDb db_;
};

}  // namespace fk::e2e
