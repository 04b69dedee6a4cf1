// Benchmark tasks: data, not code (tasks/**/*.json). A task names an op of the registry,
// its level and category, the architectures that use it, and its workloads with call
// counts (how often production calls that shape: the weight of its speedup).
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fk/op_registry.h"

namespace fk::bench {

struct TaskWorkload {
  Json shape;         // the op's workload fields (shape, dtype, attributes)
  double calls = 1;   // call count weight (> 0)
  std::string label;  // where the shape comes from, e.g. "llama-3.1-8b prefill 16384"
};

struct Task {
  std::string id;                          // unique; usually the op name
  std::string op;                          // registry op name
  std::string level;                       // L1..L4
  std::string category;                    // e.g. "dense-llm"
  std::vector<std::string> architectures;  // models that call it
  std::vector<TaskWorkload> workloads;     // timed and checked
  std::vector<Json> check_workloads;       // checked only, never timed (catches hard-coded shapes)
  std::optional<Tolerance> tolerance;      // override of the op's tolerance
  std::vector<std::string> forbid;         // libraries a candidate may not call ("cublas", ...)
  std::filesystem::path source;            // the file it was read from
  const OpDef& op_def() const { return OpRegistry::global().def(op); }
};

// Parses and validates one task (every error names the file and the field).
Task parse_task(const Json& j, const std::filesystem::path& source);
Task load_task_file(const std::filesystem::path& path);
// All tasks under a directory (recursively, *.json), sorted by id; duplicate ids are an error.
std::vector<Task> load_tasks(const std::filesystem::path& dir);
// The tasks folder: $FK_TASKS_DIR, else <source tree>/tasks.
std::filesystem::path default_tasks_dir();
Json task_to_json(const Task& t);

struct TaskFilter {
  std::string level, category, arch;
  bool matches(const Task& t) const;
};

}  // namespace fk::bench
