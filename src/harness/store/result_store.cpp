#include "harness/store/result_store.h"

#include <cstdlib>
#include <ctime>

#include "fk/op_registry.h"
#include "harness/device/device_info.h"

namespace fk::bench {

namespace fs = std::filesystem;

namespace {

constexpr const char* kColumns =
    "id, batch, created, task, candidate, candidate_hash, verdict, backend, device, toolchain, message, speedup, "
    "sol, result, variants, sandbox";

StoredRun read_row(SqlStatement& s) {
  StoredRun r;
  r.id = s.integer(0);
  r.batch = s.text(1);
  r.created = s.text(2);
  r.task = s.text(3);
  r.candidate = s.text(4);
  r.candidate_hash = s.text(5);
  r.verdict = s.text(6);
  r.backend = s.text(7);
  r.device = s.text(8);
  r.toolchain = s.text(9);
  r.message = s.text(10);
  r.speedup = s.real(11);
  r.sol = s.real(12);
  r.result = Json::parse(s.text(13), nullptr, /*allow_exceptions=*/false);
  r.variants = s.text(14);  // NULL in rows stored before the column existed: ""
  r.sandbox = s.text(15);   // likewise
  return r;
}

}  // namespace

fs::path ResultStore::default_path() {
  if (const char* p = std::getenv("FK_RESULTS_DB")) return p;
  if (const char* h = std::getenv("HOME")) return fs::path(h) / ".cache" / "fastkernels" / "results.db";
  return fs::temp_directory_path() / "fastkernels-results.db";
}

std::string ResultStore::new_batch_id() {
  char suffix[8];
  std::snprintf(suffix, sizeof(suffix), "%04x", static_cast<unsigned>(std::rand() ^ std::time(nullptr)) & 0xffff);
  return utc_timestamp() + "-" + suffix;
}

ResultStore::ResultStore(const fs::path& path) : db_(path) {
  db_.exec(
      "CREATE TABLE IF NOT EXISTS runs ("
      " id INTEGER PRIMARY KEY AUTOINCREMENT, batch TEXT NOT NULL, created TEXT NOT NULL, task TEXT NOT NULL,"
      " candidate TEXT, candidate_hash TEXT, verdict TEXT NOT NULL, backend TEXT, device TEXT, toolchain TEXT,"
      " message TEXT, speedup REAL, sol REAL, seeds TEXT, secret_seed TEXT, result TEXT NOT NULL);"
      "CREATE INDEX IF NOT EXISTS runs_task ON runs(task);"
      "CREATE INDEX IF NOT EXISTS runs_batch ON runs(batch);");
  db_.add_column_if_missing("runs", "variants", "TEXT");
  db_.add_column_if_missing("runs", "sandbox", "TEXT");
}

int64_t ResultStore::add(const std::string& batch, const CandidateRun& run) {
  SqlStatement s(db_,
                 "INSERT INTO runs (batch, created, task, candidate, candidate_hash, verdict, backend, device, toolchain,"
                 " message, speedup, sol, seeds, secret_seed, result, variants, sandbox) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  const EvalResult& r = run.result;
  s.bind(1, batch);
  s.bind(2, utc_timestamp());
  s.bind(3, run.task);
  s.bind(4, run.candidate.string());
  s.bind(5, r.candidate_hash);
  s.bind(6, verdict_name(r.verdict));
  s.bind(7, r.backend);
  s.bind(8, r.device);
  s.bind(9, r.toolchain);
  s.bind(10, r.message);
  s.bind(11, r.speedup);
  s.bind(12, r.sol_candidate);
  s.bind(13, Json(r.seeds).dump());
  s.bind(14, std::to_string(r.secret_seed));
  s.bind(15, run_to_json(run).dump());
  s.bind(16, OpRegistry::global().active_variants());
  s.bind(17, r.sandbox);
  s.step();
  return db_.last_insert_id();
}

std::vector<StoredRun> ResultStore::list(const std::string& task, int limit) {
  const std::string sql = concat("SELECT ", kColumns, " FROM runs", task.empty() ? "" : " WHERE task = ?",
                                 " ORDER BY id DESC LIMIT ", limit);
  SqlStatement s(db_, sql);
  if (!task.empty()) s.bind(1, task);
  std::vector<StoredRun> out;
  while (s.step()) out.push_back(read_row(s));
  return out;
}

std::vector<StoredRun> ResultStore::batch(const std::string& batch_id) {
  const std::string sql = concat("SELECT ", kColumns, " FROM runs WHERE batch = ? ORDER BY task");
  SqlStatement s(db_, sql);
  s.bind(1, batch_id);
  std::vector<StoredRun> out;
  while (s.step()) out.push_back(read_row(s));
  return out;
}

StoredRun ResultStore::get(int64_t id) {
  const std::string sql = concat("SELECT ", kColumns, " FROM runs WHERE id = ?");
  SqlStatement s(db_, sql);
  s.bind(1, id);
  if (!s.step()) FK_FAIL(FK_ERR_INVALID_ARGUMENT, "no result with id ", id, " in ", db_.path().string());
  return read_row(s);
}

std::vector<std::string> ResultStore::batches(int limit) {
  const std::string sql = concat("SELECT batch FROM runs GROUP BY batch ORDER BY MAX(id) DESC LIMIT ", limit);
  SqlStatement s(db_, sql);
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

}  // namespace fk::bench
