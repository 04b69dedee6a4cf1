// The schema migration of a results database opened by several evaluations at once: each
// finds the new column missing, one adds it, none fails ("duplicate column name" was what
// the loser of that race got).
#include "harness/store/sqlite_db.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

namespace fk::bench {
namespace {

TEST(SqliteDb, ColumnsAddedByManyConnectionsAtOnce) {
  const auto path = std::filesystem::temp_directory_path() / ("fk-sqlite-race-" + std::to_string(getpid()) + ".db");
  std::filesystem::remove(path);
  SqliteDb(path).exec("CREATE TABLE runs (id INTEGER PRIMARY KEY)");
  std::atomic<int> failures{0}, ready{0};
  std::vector<std::thread> openers;
  for (int i = 0; i < 8; ++i)
    openers.emplace_back([&] {
      try {
        SqliteDb db(path);  // a connection of its own, as another process has
        ++ready;
        while (ready.load() < 8) std::this_thread::yield();
        db.add_column_if_missing("runs", "variants", "TEXT");
        db.add_column_if_missing("runs", "sandbox", "TEXT");
      } catch (...) {
        ++failures;
      }
    });
  for (auto& t : openers) t.join();
  EXPECT_EQ(failures.load(), 0);
  SqliteDb db(path);
  EXPECT_TRUE(db.has_column("runs", "variants"));
  EXPECT_TRUE(db.has_column("runs", "sandbox"));
  EXPECT_FALSE(db.has_column("runs", "missing"));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace fk::bench
