#include "harness/judge/task.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>

#include "fk/toolchain_config.h"

namespace fk::bench {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void bad(const fs::path& src, const std::string& what) {
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, "task ", src.string(), ": ", what);
}

std::string req_string(const Json& j, const char* key, const fs::path& src) {
  if (!j.contains(key)) bad(src, concat("missing field '", key, "'"));
  if (!j[key].is_string() || j[key].get<std::string>().empty())
    bad(src, concat("field '", key, "' must be a non-empty string, got ", j[key].dump()));
  return j[key].get<std::string>();
}

std::vector<std::string> string_list(const Json& j, const char* key, const fs::path& src) {
  std::vector<std::string> out;
  if (!j.contains(key)) return out;
  if (!j[key].is_array()) bad(src, concat("field '", key, "' must be a list of strings"));
  for (const auto& e : j[key]) {
    if (!e.is_string()) bad(src, concat("field '", key, "' must hold strings, got ", e.dump()));
    out.push_back(e.get<std::string>());
  }
  return out;
}

}  // namespace

Task parse_task(const Json& j, const fs::path& src) {
  if (!j.is_object()) bad(src, "must be a JSON object");
  static const std::set<std::string> known = {"id", "op", "level", "category", "architectures", "workloads",
                                              "check_workloads", "tolerance", "forbid", "description"};
  for (const auto& [k, v] : j.items())
    if (!known.contains(k)) bad(src, concat("unknown field '", k, "'"));
  Task t;
  t.source = src;
  t.id = req_string(j, "id", src);
  t.op = req_string(j, "op", src);
  t.level = req_string(j, "level", src);
  t.category = req_string(j, "category", src);
  if (t.level.size() != 2 || t.level[0] != 'L' || t.level[1] < '1' || t.level[1] > '4')
    bad(src, concat("level must be L1..L4, got '", t.level, "'"));
  if (!OpRegistry::global().has(t.op)) bad(src, concat("op '", t.op, "' is not in the registry"));
  t.architectures = string_list(j, "architectures", src);
  t.forbid = string_list(j, "forbid", src);
  for (const auto& f : t.forbid)
    if (f != "cublas" && f != "cublasLt" && f != "cudnn" && f != "baseline")
      bad(src, concat("forbid: unknown library '", f, "' (known: cublas, cublasLt, cudnn, baseline)"));

  if (!j.contains("workloads") || !j["workloads"].is_array() || j["workloads"].empty())
    bad(src, "field 'workloads' must be a non-empty list");
  const OpDef& def = OpRegistry::global().def(t.op);
  size_t i = 0;
  for (const auto& w : j["workloads"]) {
    if (!w.is_object() || !w.contains("shape") || !w["shape"].is_object())
      bad(src, concat("workloads[", i, "] must be an object with a 'shape' object"));
    TaskWorkload tw;
    tw.shape = w["shape"];
    if (w.contains("calls")) {
      if (!w["calls"].is_number() || w["calls"].get<double>() <= 0)
        bad(src, concat("workloads[", i, "].calls must be a positive number, got ", w["calls"].dump()));
      tw.calls = w["calls"].get<double>();
    }
    if (w.contains("label")) tw.label = w["label"].get<std::string>();
    t.workloads.push_back(std::move(tw));
    ++i;
  }
  if (j.contains("check_workloads")) {
    if (!j["check_workloads"].is_array()) bad(src, "field 'check_workloads' must be a list of shape objects");
    for (const auto& w : j["check_workloads"]) {
      if (!w.is_object()) bad(src, concat("check_workloads entries must be objects, got ", w.dump()));
      t.check_workloads.push_back(w);
    }
  }
  if (j.contains("tolerance")) {
    const auto& tol = j["tolerance"];
    if (!tol.is_object() || !tol.contains("atol") || !tol.contains("rtol") || !tol["atol"].is_number() ||
        !tol["rtol"].is_number() || tol["atol"].get<double>() < 0 || tol["rtol"].get<double>() < 0)
      bad(src, "field 'tolerance' must be {\"atol\": number >= 0, \"rtol\": number >= 0}");
    t.tolerance = Tolerance{tol["atol"].get<double>(), tol["rtol"].get<double>()};
  }
  (void)def;
  return t;
}

Task load_task_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) FK_FAIL(FK_ERR_INVALID_ARGUMENT, "task ", path.string(), ": cannot open");
  Json j;
  try {
    j = Json::parse(in);
  } catch (const Json::parse_error& e) {
    bad(path, concat("not valid JSON: ", e.what()));
  }
  return parse_task(j, path);
}

std::vector<Task> load_tasks(const fs::path& dir) {
  FK_CHECK(fs::is_directory(dir), "tasks folder ", dir.string(), " does not exist");
  std::vector<Task> tasks;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json") tasks.push_back(load_task_file(e.path()));
  std::sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) { return a.id < b.id; });
  for (size_t i = 1; i < tasks.size(); ++i)
    if (tasks[i].id == tasks[i - 1].id)
      FK_FAIL(FK_ERR_INVALID_ARGUMENT, "task id '", tasks[i].id, "' appears in ", tasks[i - 1].source.string(),
              " and ", tasks[i].source.string());
  return tasks;
}

fs::path default_tasks_dir() {
  if (const char* d = std::getenv("FK_TASKS_DIR")) return d;
  return fs::path(FK_SOURCE_ROOT) / "tasks";
}

Json task_to_json(const Task& t) {
  Json j = {{"id", t.id}, {"op", t.op}, {"level", t.level}, {"category", t.category},
            {"architectures", t.architectures}};
  Json ws = Json::array();
  for (const auto& w : t.workloads) ws.push_back({{"shape", w.shape}, {"calls", w.calls}, {"label", w.label}});
  j["workloads"] = ws;
  if (!t.check_workloads.empty()) j["check_workloads"] = t.check_workloads;
  if (t.tolerance) j["tolerance"] = {{"atol", t.tolerance->atol}, {"rtol", t.tolerance->rtol}};
  if (!t.forbid.empty()) j["forbid"] = t.forbid;
  return j;
}

bool TaskFilter::matches(const Task& t) const {
  if (!level.empty() && t.level != level) return false;
  if (!category.empty() && t.category != category) return false;
  if (!arch.empty() && std::find(t.architectures.begin(), t.architectures.end(), arch) == t.architectures.end())
    return false;
  return true;
}

}  // namespace fk::bench
