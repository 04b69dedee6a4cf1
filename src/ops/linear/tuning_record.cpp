#include "ops/linear/tuning_record.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

namespace fk::ops {

TuningRecord::TuningRecord(std::filesystem::path file) : file_(std::move(file)) {
  std::ifstream in(file_);
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("key") || !j["key"].is_string() || !j.contains("choice") ||
        !j["choice"].is_number_integer() || j["choice"].get<int>() < 0)
      continue;  // a torn or foreign line: skipped, the problem is tuned again
    choices_[j["key"].get<std::string>()] = j["choice"].get<int>();
  }
}

std::optional<int> TuningRecord::find(const std::string& key) const {
  std::lock_guard lk(mu_);
  const auto it = choices_.find(key);
  if (it == choices_.end()) return std::nullopt;
  return it->second;
}

void TuningRecord::save(const std::string& key, int choice) {
  std::lock_guard lk(mu_);
  choices_[key] = choice;
  std::error_code ec;
  std::filesystem::create_directories(file_.parent_path(), ec);
  // One write of one whole line in append mode: lines of concurrent writers do not mix.
  const std::string line = nlohmann::json{{"key", key}, {"choice", choice}}.dump() + "\n";
  std::FILE* f = std::fopen(file_.c_str(), "a");
  const bool ok = f != nullptr && std::fwrite(line.data(), 1, line.size(), f) == line.size();
  if (f != nullptr) std::fclose(f);
  if (!ok && !warned_) {
    warned_ = true;
    std::fprintf(stderr, "fastkernels: cannot record linear tuning choices in %s; they will not be reused\n",
                 file_.c_str());
  }
}

std::optional<std::filesystem::path> tuning_dir() {
  if (const char* home = std::getenv("FK_HOME"); home && *home) return std::filesystem::path(home) / "tuning";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "fastkernels" / "tuning";
  return std::nullopt;
}

std::string tuning_file_stem(const std::string& text) {
  std::string out;
  for (const char c : text) out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '-';
  return out;
}

}  // namespace fk::ops
