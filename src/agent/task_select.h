// Which tasks `fk agent --tasks FILTER` runs. FILTER is a comma-separated list of terms;
// a task is selected when it matches any term:
//   all | *            every task
//   rms_norm, *norm*   a task id, or a glob over ids (* and ?)
//   level=L1           a level; category=dense-llm, arch=llama-3.1-8b likewise
#pragma once
#include <string>
#include <vector>

#include "harness/judge/task.h"

namespace fk::agent {

// Tasks in their given order; throws fk::Error when a term is malformed or nothing matches.
std::vector<bench::Task> select_tasks(const std::vector<bench::Task>& tasks, const std::string& filter);

}  // namespace fk::agent
