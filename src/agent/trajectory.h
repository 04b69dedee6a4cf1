// The trajectory log: one JSON object per line (model calls, evaluations, run headers),
// appended and flushed as each finishes, and read back to resume an interrupted run. A
// record is keyed by type/task/strategy/step; the last record of a key wins. A partial
// last line (a run killed mid-write) or any line that is not JSON is skipped on load and
// the file is cut back to its last complete line, so new records start on a line of their
// own.
#pragma once
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace fk::agent {

class Trajectory {
 public:
  explicit Trajectory(const std::filesystem::path& file);

  // Adds the record (it must hold "type", "task", "strategy" and "step"), thread-safe.
  void append(const nlohmann::json& record);
  // The last record of that key: from this run or a previous one.
  std::optional<nlohmann::json> find(const std::string& type, const std::string& task, const std::string& strategy,
                                     const std::string& step) const;

  int loaded_records() const { return loaded_; }
  int skipped_lines() const { return skipped_; }  // partial or malformed lines on load
  const std::filesystem::path& path() const { return path_; }

 private:
  static std::string key(const std::string& type, const std::string& task, const std::string& strategy,
                         const std::string& step);
  std::filesystem::path path_;
  std::ofstream out_;
  mutable std::mutex mutex_;
  std::map<std::string, nlohmann::json> index_;
  int loaded_ = 0, skipped_ = 0;
};

}  // namespace fk::agent
