#include "bench/result_store.h"

#include <sqlite3.h>

#include <chrono>
#include <cstdlib>
#include <ctime>

namespace fk::bench {

namespace fs = std::filesystem;

namespace {

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A prepared statement that finalises itself.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK)
      FK_FAIL(FK_ERR_INTERNAL, "results database: cannot prepare '", sql, "': ", sqlite3_errmsg(db));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  void bind(int i, const std::string& v) { sqlite3_bind_text(s_, i, v.c_str(), -1, SQLITE_TRANSIENT); }
  void bind(int i, double v) { sqlite3_bind_double(s_, i, v); }
  void bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  bool step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    FK_FAIL(FK_ERR_INTERNAL, "results database: ", sqlite3_errmsg(db_));
  }
  std::string text(int i) {
    const auto* p = sqlite3_column_text(s_, i);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  double real(int i) { return sqlite3_column_double(s_, i); }
  int64_t integer(int i) { return sqlite3_column_int64(s_, i); }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

constexpr const char* kColumns =
    "id, batch, created, task, candidate, candidate_hash, verdict, backend, device, toolchain, message, speedup, "
    "sol, result";

StoredRun read_row(Stmt& s) {
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
  return utc_now() + "-" + suffix;
}

ResultStore::ResultStore(const fs::path& path) : path_(path) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "cannot open results database ", path.string(), ": ", msg);
  }
  sqlite3_busy_timeout(db_, 5000);  // several evaluations may write at once
  exec(
      "CREATE TABLE IF NOT EXISTS runs ("
      " id INTEGER PRIMARY KEY AUTOINCREMENT, batch TEXT NOT NULL, created TEXT NOT NULL, task TEXT NOT NULL,"
      " candidate TEXT, candidate_hash TEXT, verdict TEXT NOT NULL, backend TEXT, device TEXT, toolchain TEXT,"
      " message TEXT, speedup REAL, sol REAL, seeds TEXT, secret_seed TEXT, result TEXT NOT NULL);"
      "CREATE INDEX IF NOT EXISTS runs_task ON runs(task);"
      "CREATE INDEX IF NOT EXISTS runs_batch ON runs(batch);");
}

ResultStore::~ResultStore() { sqlite3_close(db_); }

void ResultStore::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "?";
    sqlite3_free(err);
    FK_FAIL(FK_ERR_INTERNAL, "results database ", path_.string(), ": ", msg);
  }
}

int64_t ResultStore::add(const std::string& batch, const CandidateRun& run) {
  Stmt s(db_,
         "INSERT INTO runs (batch, created, task, candidate, candidate_hash, verdict, backend, device, toolchain,"
         " message, speedup, sol, seeds, secret_seed, result) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  const EvalResult& r = run.result;
  s.bind(1, batch);
  s.bind(2, utc_now());
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
  s.step();
  return sqlite3_last_insert_rowid(db_);
}

std::vector<StoredRun> ResultStore::list(const std::string& task, int limit) {
  const std::string sql = concat("SELECT ", kColumns, " FROM runs", task.empty() ? "" : " WHERE task = ?",
                                 " ORDER BY id DESC LIMIT ", limit);
  Stmt s(db_, sql.c_str());
  if (!task.empty()) s.bind(1, task);
  std::vector<StoredRun> out;
  while (s.step()) out.push_back(read_row(s));
  return out;
}

std::vector<StoredRun> ResultStore::batch(const std::string& batch_id) {
  const std::string sql = concat("SELECT ", kColumns, " FROM runs WHERE batch = ? ORDER BY task");
  Stmt s(db_, sql.c_str());
  s.bind(1, batch_id);
  std::vector<StoredRun> out;
  while (s.step()) out.push_back(read_row(s));
  return out;
}

StoredRun ResultStore::get(int64_t id) {
  const std::string sql = concat("SELECT ", kColumns, " FROM runs WHERE id = ?");
  Stmt s(db_, sql.c_str());
  s.bind(1, id);
  if (!s.step()) FK_FAIL(FK_ERR_INVALID_ARGUMENT, "no result with id ", id, " in ", path_.string());
  return read_row(s);
}

std::vector<std::string> ResultStore::batches(int limit) {
  const std::string sql = concat("SELECT batch FROM runs GROUP BY batch ORDER BY MAX(id) DESC LIMIT ", limit);
  Stmt s(db_, sql.c_str());
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

}  // namespace fk::bench
