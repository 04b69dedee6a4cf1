#include "agent/task_select.h"

#include <fnmatch.h>

#include <algorithm>
#include <sstream>

#include "fk/status.h"

namespace fk::agent {

namespace {

bool matches(const bench::Task& t, const std::string& term) {
  if (term == "all" || term == "*") return true;
  const size_t eq = term.find('=');
  if (eq == std::string::npos) return fnmatch(term.c_str(), t.id.c_str(), 0) == 0;
  const std::string key = term.substr(0, eq), value = term.substr(eq + 1);
  if (key == "level") return t.level == value;
  if (key == "category") return t.category == value;
  return std::find(t.architectures.begin(), t.architectures.end(), value) != t.architectures.end();  // arch=
}

}  // namespace

std::vector<bench::Task> select_tasks(const std::vector<bench::Task>& tasks, const std::string& filter) {
  std::vector<std::string> terms;
  std::istringstream in(filter);
  std::string term;
  while (std::getline(in, term, ','))
    if (const size_t b = term.find_first_not_of(' '); b != std::string::npos)
      terms.push_back(term.substr(b, term.find_last_not_of(' ') - b + 1));
  FK_CHECK(!terms.empty(), "--tasks: empty filter");
  for (const auto& x : terms)
    if (const size_t eq = x.find('='); eq != std::string::npos) {
      const std::string key = x.substr(0, eq);
      FK_CHECK(key == "level" || key == "category" || key == "arch", "--tasks: unknown key '", key, "' in '", x,
               "' (level=, category=, arch=)");
    }
  std::vector<bench::Task> out;
  for (const auto& t : tasks)
    if (std::any_of(terms.begin(), terms.end(), [&](const std::string& x) { return matches(t, x); })) out.push_back(t);
  FK_CHECK(!out.empty(), "--tasks '", filter, "' matches no task");
  return out;
}

}  // namespace fk::agent
