#include "harness/store/sqlite_db.h"

#include <sqlite3.h>

#include "fk/status.h"

namespace fk::bench {

namespace fs = std::filesystem;

SqliteDb::SqliteDb(const fs::path& path) : path_(path) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "cannot open results database ", path.string(), ": ", msg);
  }
  sqlite3_busy_timeout(db_, 5000);  // several evaluations may write at once
}

SqliteDb::~SqliteDb() { sqlite3_close(db_); }

void SqliteDb::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "?";
    sqlite3_free(err);
    FK_FAIL(FK_ERR_INTERNAL, "results database ", path_.string(), ": ", msg);
  }
}

bool SqliteDb::has_column(const std::string& table, const std::string& column) const {
  SqlStatement columns(*this, "PRAGMA table_info(" + table + ")");
  while (columns.step())
    if (columns.text(1) == column) return true;  // table_info rows: cid, name, type, ...
  return false;
}

void SqliteDb::add_column_if_missing(const std::string& table, const std::string& column, const std::string& type) {
  if (has_column(table, column)) return;
  // Processes opening one database at once (evaluations run in parallel) may all find the
  // column missing: the one that takes the write lock first adds it, the others see it then.
  exec("BEGIN IMMEDIATE");
  try {
    if (!has_column(table, column)) exec(("ALTER TABLE " + table + " ADD COLUMN " + column + " " + type).c_str());
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

int64_t SqliteDb::last_insert_id() const { return sqlite3_last_insert_rowid(db_); }

SqlStatement::SqlStatement(const SqliteDb& db, const std::string& sql) : db_(db) {
  if (sqlite3_prepare_v2(db.handle(), sql.c_str(), -1, &s_, nullptr) != SQLITE_OK)
    FK_FAIL(FK_ERR_INTERNAL, "results database ", db.path().string(), ": cannot prepare '", sql,
            "': ", sqlite3_errmsg(db.handle()));
}

SqlStatement::~SqlStatement() { sqlite3_finalize(s_); }

void SqlStatement::bind(int i, const std::string& v) { sqlite3_bind_text(s_, i, v.c_str(), -1, SQLITE_TRANSIENT); }
void SqlStatement::bind(int i, double v) { sqlite3_bind_double(s_, i, v); }
void SqlStatement::bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
void SqlStatement::bind(int i, const std::optional<double>& v) {
  if (v)
    bind(i, *v);
  else
    sqlite3_bind_null(s_, i);
}
void SqlStatement::bind(int i, const std::optional<int64_t>& v) {
  if (v)
    bind(i, *v);
  else
    sqlite3_bind_null(s_, i);
}

bool SqlStatement::step() {
  const int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  FK_FAIL(FK_ERR_INTERNAL, "results database ", db_.path().string(), ": ", sqlite3_errmsg(db_.handle()));
}

std::string SqlStatement::text(int i) {
  const auto* p = sqlite3_column_text(s_, i);
  return p ? reinterpret_cast<const char*>(p) : "";
}
double SqlStatement::real(int i) { return sqlite3_column_double(s_, i); }
int64_t SqlStatement::integer(int i) { return sqlite3_column_int64(s_, i); }
std::optional<double> SqlStatement::optional_real(int i) {
  if (sqlite3_column_type(s_, i) == SQLITE_NULL) return std::nullopt;
  return real(i);
}
std::optional<int64_t> SqlStatement::optional_integer(int i) {
  if (sqlite3_column_type(s_, i) == SQLITE_NULL) return std::nullopt;
  return integer(i);
}

}  // namespace fk::bench
