// The linear op's autotuning choices, kept on disk. Timing picks the fastest of cuBLASLt's
// candidate algorithms for decode-sized problems, and two processes timing the same
// problem can pick differently; different algorithms round differently, so the engine's
// tokens would depend on timing noise from one run to the next (and an end-to-end
// comparison of two engine processes would see differences no candidate caused). The
// first process to tune a problem records its choice; every later one, on the same GPU
// model and cuBLASLt version, reuses it.
//
// One line per choice, appended (`{"key": ..., "choice": i}`: the index into the
// heuristic's candidate list, which is deterministic for a problem, device and library);
// the last line for a key wins and unreadable lines are skipped, so concurrent writers
// and interrupted writes lose at most their own line. No CUDA here: tested on the CPU.
#pragma once
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace fk::ops {

class TuningRecord {
 public:
  // Loads `file` if it exists; save() creates it (and its folder).
  explicit TuningRecord(std::filesystem::path file);

  std::optional<int> find(const std::string& key) const;
  // Remembers the choice and appends it to the file; a file that cannot be written is
  // reported once on stderr and the choice is kept in memory only.
  void save(const std::string& key, int choice);

  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path file_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, int> choices_;
  bool warned_ = false;
};

// $FK_HOME/tuning, else ~/.cache/fastkernels/tuning (nullopt when neither is set).
std::optional<std::filesystem::path> tuning_dir();

// A file name from free text (a GPU's name, a library version): letters, digits, '-', '.'.
std::string tuning_file_stem(const std::string& text);

}  // namespace fk::ops
