// The linear op's on-disk record of autotuning choices (ops/linear/tuning_record.h): what
// one process saves, the next one finds; the last line of a key wins; torn or foreign
// lines are skipped; a record that cannot be written keeps its choices in memory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ops/linear/tuning_record.h"

namespace fk::ops {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("fk-tuning-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

TEST(TuningRecord, AChoiceSavedByOneProcessIsFoundByTheNext) {
  const fs::path dir = fresh_dir("reuse");
  const fs::path file = dir / "nested" / "linear-H100.jsonl";
  {
    TuningRecord r(file);  // no file yet
    EXPECT_FALSE(r.find("m=32 n=4096").has_value());
    r.save("m=32 n=4096", 3);
    r.save("m=64 n=4096", 0);
    EXPECT_EQ(r.find("m=32 n=4096"), 3);
  }
  TuningRecord again(file);
  EXPECT_EQ(again.find("m=32 n=4096"), 3);
  EXPECT_EQ(again.find("m=64 n=4096"), 0);
  EXPECT_FALSE(again.find("m=128 n=4096").has_value());
  fs::remove_all(dir);
}

TEST(TuningRecord, LastLineWinsAndBadLinesAreSkipped) {
  const fs::path dir = fresh_dir("lines");
  fs::create_directories(dir);
  const fs::path file = dir / "t.jsonl";
  std::ofstream(file) << R"({"key": "a", "choice": 1})" << "\n"
                      << "not json\n"
                      << R"({"key": "b", "choice": -2})" << "\n"
                      << R"({"key": "c"})" << "\n"
                      << R"({"key": "a", "choice": 4})" << "\n"
                      << R"({"key": "d", "cho)";  // torn: the writer was interrupted
  TuningRecord r(file);
  EXPECT_EQ(r.find("a"), 4);
  EXPECT_FALSE(r.find("b").has_value());
  EXPECT_FALSE(r.find("c").has_value());
  EXPECT_FALSE(r.find("d").has_value());
  fs::remove_all(dir);
}

TEST(TuningRecord, UnwritableFileKeepsChoicesInMemory) {
  const fs::path dir = fresh_dir("unwritable");
  fs::create_directories(dir);
  const fs::path blocker = dir / "file";
  std::ofstream(blocker) << "x";
  TuningRecord r(blocker / "t.jsonl");  // its folder would be a regular file
  r.save("k", 2);
  EXPECT_EQ(r.find("k"), 2);
  fs::remove_all(dir);
}

TEST(TuningRecord, FileStemsAreSafeNames) {
  EXPECT_EQ(tuning_file_stem("linear-NVIDIA H100 80GB HBM3-sm132-cublaslt130100"),
            "linear-NVIDIA-H100-80GB-HBM3-sm132-cublaslt130100");
  EXPECT_EQ(tuning_file_stem("a/b\\c:d"), "a-b-c-d");
}

}  // namespace
}  // namespace fk::ops
