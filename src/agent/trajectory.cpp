#include "agent/trajectory.h"

#include <sstream>

#include "fk/status.h"

namespace fk::agent {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Trajectory::key(const std::string& type, const std::string& task, const std::string& strategy,
                            const std::string& step) {
  return type + '\x1f' + task + '\x1f' + strategy + '\x1f' + step;
}

Trajectory::Trajectory(const fs::path& file) : path_(file) {
  if (file.has_parent_path()) fs::create_directories(file.parent_path());
  size_t keep = 0;  // bytes up to the end of the last complete line
  if (fs::exists(file)) {
    std::ifstream in(file, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    size_t at = 0;
    while (at < text.size()) {
      const size_t nl = text.find('\n', at);
      if (nl == std::string::npos) {  // killed mid-write: no newline yet
        ++skipped_;
        break;
      }
      const json rec = json::parse(text.begin() + static_cast<std::ptrdiff_t>(at),
                                   text.begin() + static_cast<std::ptrdiff_t>(nl), nullptr, false);
      if (rec.is_object() && rec.contains("type")) {
        index_[key(rec.value("type", ""), rec.value("task", ""), rec.value("strategy", ""), rec.value("step", ""))] =
            rec;
        ++loaded_;
      } else if (nl > at) {
        ++skipped_;
      }
      at = nl + 1;
      keep = at;
    }
    if (keep < text.size()) fs::resize_file(file, keep);
  }
  out_.open(file, std::ios::binary | std::ios::app);
  FK_CHECK(out_.good(), "cannot open the trajectory log ", file.string(), " for writing");
}

void Trajectory::append(const json& record) {
  FK_CHECK(record.contains("type") && record.contains("task") && record.contains("step"),
           "trajectory record without type/task/step");
  // Invalid UTF-8 from a model must not make the log unreadable: replace it.
  const std::string line = record.dump(-1, ' ', false, json::error_handler_t::replace);
  std::lock_guard lock(mutex_);
  out_ << line << '\n';
  out_.flush();
  FK_CHECK(out_.good(), "cannot write the trajectory log ", path_.string());
  index_[key(record.value("type", ""), record.value("task", ""), record.value("strategy", ""),
             record.value("step", ""))] = record;
}

std::optional<json> Trajectory::find(const std::string& type, const std::string& task, const std::string& strategy,
                                     const std::string& step) const {
  std::lock_guard lock(mutex_);
  auto it = index_.find(key(type, task, strategy, step));
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

}  // namespace fk::agent
