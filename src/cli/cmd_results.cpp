// `fk results list | show | compare`: the results database.
#include <cstdio>
#include <map>

#include "harness/judge/report.h"
#include "harness/store/result_store.h"
#include "cli/command.h"

namespace fk::cli {
namespace {

using namespace fk::bench;

struct ResultsOptions {
  std::string db, task, a, b;
  int64_t id = 0;
  int limit = 30;
} g;

ResultStore open_store() { return ResultStore(g.db.empty() ? ResultStore::default_path() : std::filesystem::path(g.db)); }

void cmd_list() {
  ResultStore store = open_store();
  std::printf("%-6s %-22s %-26s %-14s %8s  %s\n", "id", "created", "task", "verdict", "speedup", "candidate");
  for (const auto& r : store.list(g.task, g.limit))
    std::printf("%-6lld %-22s %-26s %-14s %8.3f  %s\n", static_cast<long long>(r.id), r.created.c_str(), r.task.c_str(),
                r.verdict.c_str(), r.speedup, r.candidate.c_str());
}

void cmd_show() {
  ResultStore store = open_store();
  const StoredRun r = store.get(g.id);
  Json shown = r.result;
  shown["variants"] = r.variants;  // beside the toolchain: what the baseline ran (a column of its own)
  std::printf("%s\n", shown.dump(2).c_str());
}

// A batch id, or a run id (then its batch).
std::vector<StoredRun> resolve(ResultStore& store, const std::string& key) {
  auto runs = store.batch(key);
  if (!runs.empty()) return runs;
  char* end = nullptr;
  const long long id = std::strtoll(key.c_str(), &end, 10);
  FK_CHECK(end && *end == 0, "'", key, "' is neither a batch nor a result id");
  return {store.get(id)};
}

void cmd_compare() {
  ResultStore store = open_store();
  auto a = resolve(store, g.a), b = resolve(store, g.b);
  // Kernel variants change the baseline: say so when the sides ran different ones.
  auto variants_of = [](const std::vector<StoredRun>& runs) {
    std::string v = runs.empty() ? "" : runs.front().variants;
    for (const auto& r : runs)
      if (r.variants != v) return std::string("(mixed)");
    return v.empty() ? std::string("(defaults)") : v;
  };
  if (variants_of(a) != variants_of(b))
    std::printf("variants: A %s, B %s\n", variants_of(a).c_str(), variants_of(b).c_str());
  std::map<std::string, std::pair<const StoredRun*, const StoredRun*>> by_task;
  for (const auto& r : a) by_task[r.task].first = &r;
  for (const auto& r : b) by_task[r.task].second = &r;
  std::printf("%-26s %-14s %8s   %-14s %8s   %s\n", "task", "A verdict", "A", "B verdict", "B", "B/A");
  for (const auto& [task, p] : by_task) {
    auto v = [](const StoredRun* r) { return r ? r->verdict : std::string("-"); };
    auto s = [](const StoredRun* r) { return r ? r->speedup : 0.0; };
    // A speedup of 0 (a failed run, or none) has no ratio: "n/a", not a division by it.
    const bool both = speedup_measured(s(p.first)) && speedup_measured(s(p.second));
    const std::string ratio = both ? format_speedup(s(p.second) / s(p.first)) : "n/a";
    std::printf("%-26s %-14s %8s   %-14s %8s   %s\n", task.c_str(), v(p.first).c_str(),
                format_speedup(s(p.first)).c_str(), v(p.second).c_str(), format_speedup(s(p.second)).c_str(),
                ratio.c_str());
  }
}

void setup(CLI::App& app) {
  auto* r = app.add_subcommand("results", "Stored evaluation results: list, show, compare");
  r->require_subcommand(1);
  auto db = [](CLI::App* c) { c->add_option("--db", g.db, "Results database (default $FK_RESULTS_DB or ~/.cache/fastkernels/results.db)"); };
  auto* list = r->add_subcommand("list", "Latest results, newest first");
  db(list);
  list->add_option("--task", g.task, "Only this task");
  list->add_option("-n,--limit", g.limit, "How many");
  list->callback(cmd_list);
  auto* show = r->add_subcommand("show", "One result in full (JSON)");
  db(show);
  show->add_option("id", g.id, "Result id")->required();
  show->callback(cmd_show);
  auto* cmp = r->add_subcommand("compare", "Compare two batches (or results) task by task");
  db(cmp);
  cmp->add_option("a", g.a, "Batch id or result id")->required();
  cmp->add_option("b", g.b, "Batch id or result id")->required();
  cmp->callback(cmd_compare);
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
