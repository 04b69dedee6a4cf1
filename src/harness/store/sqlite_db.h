// A SQLite database file and its prepared statements, shared by the stores that keep
// results in one file (the op-level runs and the end-to-end runs each own a table there).
// Every failure is an fk::Error naming the file, never a silent bad row.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace fk::bench {

class SqliteDb {
 public:
  // Opens (creating the file and its folder if needed) the database at `path`.
  explicit SqliteDb(const std::filesystem::path& path);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  void exec(const char* sql);  // statements without results (schema)
  bool has_column(const std::string& table, const std::string& column) const;
  // Adds a column to a table that an older schema made without it (nothing when it is
  // there): how a store migrates an existing database file, safely beside other processes
  // opening the same file at the same time.
  void add_column_if_missing(const std::string& table, const std::string& column, const std::string& type);
  int64_t last_insert_id() const;
  const std::filesystem::path& path() const { return path_; }
  sqlite3* handle() const { return db_; }

 private:
  sqlite3* db_ = nullptr;
  std::filesystem::path path_;
};

// A prepared statement that finalises itself. Columns and parameters count as SQLite does
// (parameters from 1, columns from 0); an absent optional binds and reads as NULL.
class SqlStatement {
 public:
  SqlStatement(const SqliteDb& db, const std::string& sql);
  ~SqlStatement();
  SqlStatement(const SqlStatement&) = delete;
  SqlStatement& operator=(const SqlStatement&) = delete;

  void bind(int i, const std::string& v);
  void bind(int i, double v);
  void bind(int i, int64_t v);
  void bind(int i, const std::optional<double>& v);
  void bind(int i, const std::optional<int64_t>& v);
  bool step();  // true: a row is ready; false: done
  std::string text(int i);
  double real(int i);
  int64_t integer(int i);
  std::optional<double> optional_real(int i);
  std::optional<int64_t> optional_integer(int i);

 private:
  const SqliteDb& db_;
  sqlite3_stmt* s_ = nullptr;
};

}  // namespace fk::bench
