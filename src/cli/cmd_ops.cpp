// `fk ops list | variants | check | bench`: the op catalog, the ops' kernel variants, every
// op on every backend against the double-precision oracle, and the timing of every op's
// CUDA implementation on its benchmark workloads (as a fraction of the device's speed of
// light).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>

#include "harness/device/device_info.h"
#include "harness/check/op_check.h"
#include "harness/time/op_timer.h"
#include "cli/command.h"
#include "cli/variant_option.h"
#include "fk/op_registry.h"
#include "fk/runtime.h"

namespace fk::cli {
namespace {

std::vector<const OpDef*> select_ops(const std::string& name) {
  if (name.empty()) return OpRegistry::global().defs();
  return {&OpRegistry::global().def(name)};
}

int run_check(const std::string& op_name, const std::string& backend_name, uint64_t seed) {
  std::vector<DeviceType> backends;
  if (backend_name == "cpu" || backend_name == "all") backends.push_back(DeviceType::cpu);
  if (backend_name == "cuda" || (backend_name == "all" && rt::cuda_available())) backends.push_back(DeviceType::cuda);
  FK_CHECK(!backends.empty(), "--backend must be cpu, cuda or all, got '", backend_name, "'");
  if (std::find(backends.begin(), backends.end(), DeviceType::cuda) != backends.end())
    FK_CHECK(rt::cuda_available(), "--backend cuda: no CUDA device available");
  int passed = 0, failed = 0;
  for (const OpDef* def : select_ops(op_name)) {
    for (DeviceType b : backends) {
      if (!OpRegistry::global().active(def->name, b)) continue;
      for (const Json& w : def->test_workloads) {
        const auto t0 = std::chrono::steady_clock::now();
        bench::CheckResult r;
        try {
          r = bench::check_op(*def, w, seed, b);
        } catch (const std::exception& e) {
          r.passed = false;
          r.message = e.what();
        }
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        double worst_l2 = 0;
        for (const auto& o : r.outputs) worst_l2 = std::max(worst_l2, o.rel_l2_err);
        std::printf("%-4s %-24s %-5s %-60s relL2 %.2e  %7.1f ms%s%s\n", r.passed ? "PASS" : "FAIL",
                    def->name.c_str(), b == DeviceType::cpu ? "cpu" : "cuda", w.dump().c_str(), worst_l2, ms,
                    r.passed ? "" : "\n     ", r.message.c_str());
        (r.passed ? passed : failed)++;
      }
    }
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

struct BenchCli {
  std::string op;
  std::string workload;   // one workload as JSON instead of the op's bench_workloads
  std::string json_file;
  int device = 0;
  uint64_t seed = 1;
  bool no_flush = false;
  bench::TimerOptions timer;
  std::vector<std::string> variants;
};

int run_bench(const BenchCli& o) {
  if (!rt::built_with_cuda())
    FK_FAIL(FK_ERR_UNSUPPORTED, "fk ops bench times CUDA implementations: fastkernels was built without CUDA (FK_CUDA=OFF)");
  if (!rt::cuda_available()) FK_FAIL(FK_ERR_UNSUPPORTED, "fk ops bench needs a CUDA device: none is visible");
  FK_CHECK(o.workload.empty() || !o.op.empty(), "--workload needs the op it is for (fk ops bench OP --workload JSON)");
  Json custom;
  if (!o.workload.empty()) {
    try {
      custom = Json::parse(o.workload);
    } catch (const Json::exception& e) {
      FK_FAIL(FK_ERR_INVALID_ARGUMENT, "--workload is not valid JSON: ", e.what());
    }
    FK_CHECK(custom.is_object(), "--workload must be a JSON object, got ", o.workload);
  }
  bench::TimerOptions topt = o.timer;
  topt.flush_l2 = !o.no_flush;
  bench::OpBenchOptions bopt;
  bopt.timer = topt;
  bopt.seed = o.seed;

  bench::OpBenchReport report;
  report.device = bench::query_gpu(o.device).name;
  report.date = bench::utc_timestamp();
  report.command_line = bench::current_command_line();
  report.timer = topt;
  try {
    report.ceilings = bench::load_ceilings(report.device);
  } catch (const Error& e) {
    std::fprintf(stderr, "fk ops bench: ignoring the stored ceilings: %s\n", e.what());
  }
  bench::DeviceTimer timer(o.device, topt);

  int failed = 0;
  for (const OpDef* def : select_ops(o.op)) {
    if (!OpRegistry::global().active(def->name, DeviceType::cuda)) {
      FK_CHECK(o.op.empty(), "op ", def->name, " has no CUDA implementation");
      continue;
    }
    const std::vector<Json> workloads = o.workload.empty() ? def->bench_workloads : std::vector<Json>{custom};
    for (const Json& w : workloads) {
      std::fprintf(stderr, "fk ops bench: %s %s\n", def->name.c_str(), w.dump().c_str());
      bench::OpBenchResult r;
      try {
        r = bench::bench_op(*def, w, timer, bopt, report.ceilings ? &*report.ceilings : nullptr);
      } catch (const std::exception& e) {
        r = bench::OpBenchResult{};
        r.op = def->name;
        r.workload = w;
        r.error = e.what();
        ++failed;
      }
      report.results.push_back(std::move(r));
    }
  }
  std::printf("%s", bench::format_table(report).c_str());
  if (!o.json_file.empty()) {
    std::ofstream out(o.json_file);
    FK_CHECK(out.good(), "cannot write ", o.json_file);
    Json j = bench::to_json(report);
    j["variants"] = OpRegistry::global().active_variants();  // the baselines timed ran these paths
    out << j.dump(2) << "\n";
    FK_CHECK(out.good(), "writing ", o.json_file, " failed");
    std::printf("wrote %s\n", o.json_file.c_str());
  }
  return failed == 0 ? 0 : 1;
}

void setup_bench(CLI::App* ops) {
  auto* cmd = ops->add_subcommand(
      "bench", "Time every op's (or one op's) CUDA implementation on its benchmark workloads");
  static BenchCli o;
  cmd->add_option("op", o.op, "Only this op");
  cmd->add_option("--workload", o.workload, "One workload as JSON (needs the op), e.g. '{\"tokens\": 8, \"hidden\": 4096}'");
  cmd->add_option("--json", o.json_file, "Also write the report as JSON to this file");
  cmd->add_option("--device", o.device, "GPU to time on (default 0)");
  cmd->add_option("--seed", o.seed, "Input seed (default 1)");
  cmd->add_option("--warmup", o.timer.warmup_calls, "Untimed calls first (default 10)");
  cmd->add_option("--min-calls", o.timer.min_calls, "Timed calls at least (default 50)");
  cmd->add_option("--max-calls", o.timer.max_calls, "Timed calls at most (default 1000)");
  cmd->add_option("--min-time-ms", o.timer.min_time_ms, "Keep timing short calls until this much device time (default 100)");
  cmd->add_flag("--no-flush", o.no_flush, "Do not flush L2 before each call (warm-cache timing)");
  add_variant_option(cmd, o.variants);
  cmd->callback([] {
    select_variants(o.variants);
    const std::string variants = OpRegistry::global().active_variants();
    if (!variants.empty()) std::printf("variants %s\n", variants.c_str());
    const int rc = run_bench(o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

// `fk ops variants [OP] [--json]`: each kernel variant with its summary and whether it is
// selected (by FK_VARIANTS in this process).
void setup_variants(CLI::App* ops) {
  auto* cmd = ops->add_subcommand("variants", "List the ops' kernel variants (alternative paths: --variant op=name)");
  static std::string op;
  static bool json = false;
  cmd->add_option("op", op, "Only this op's");
  cmd->add_flag("--json", json, "Print them as JSON: op, name, summary, selected");
  cmd->callback([] {
    const OpRegistry& reg = OpRegistry::global();
    if (!op.empty()) reg.def(op);  // an unknown op is an error naming the known ones
    Json out = Json::array();
    for (const OpVariantInfo& v : reg.variants()) {
      if (!op.empty() && v.op != op) continue;
      out.push_back({{"op", v.op}, {"name", v.name}, {"summary", v.summary}, {"selected", reg.variant_on(v.op, v.name)}});
    }
    if (json) {
      std::printf("%s\n", out.dump(2).c_str());
      return;
    }
    std::printf("%-30s %-18s %-3s %s\n", "op", "variant", "on", "summary");
    for (const Json& v : out)
      std::printf("%-30s %-18s %-3s %s\n", v["op"].get<std::string>().c_str(), v["name"].get<std::string>().c_str(),
                  v["selected"].get<bool>() ? "*" : "", v["summary"].get<std::string>().c_str());
  });
}

// `fk ops list --json`: what scripts (tasks/generate.py, bench/torch_ops_bench.py) read op
// shapes and facts from, so they keep no tables of their own.
Json op_catalog_json() {
  const OpRegistry& reg = OpRegistry::global();
  const std::vector<OpVariantInfo> variants = reg.variants();
  Json ops = Json::array();
  for (const OpDef* d : reg.defs()) {
    Json backends = Json::array(), variant_names = Json::array();
    if (reg.baseline(d->name, DeviceType::cpu)) backends.push_back("cpu");
    if (reg.baseline(d->name, DeviceType::cuda)) backends.push_back("cuda");
    for (const OpVariantInfo& v : variants)
      if (v.op == d->name) variant_names.push_back(v.name);
    ops.push_back({{"name", d->name},
                   {"level", d->level},
                   {"family", d->family},
                   {"summary", d->summary},
                   {"architectures", d->architectures},
                   {"covers", d->covers},
                   {"variants", variant_names},
                   {"backends", backends},
                   {"capturable", static_cast<bool>(d->workload_from_call)},
                   {"test_workload_count", d->test_workloads.size()},
                   {"bench_workload_count", d->bench_workloads.size()},
                   {"bench_workloads", d->bench_workloads}});
  }
  return {{"ops", ops}};
}

void setup(CLI::App& app) {
  auto* ops = app.add_subcommand("ops", "The op catalog: list ops, check them against the oracle, time them");
  ops->require_subcommand(1);

  auto* list = ops->add_subcommand("list", "List every op with its family, level and backends");
  static bool list_json = false;
  list->add_flag("--json", list_json,
                 "Print the catalog as JSON: per op its definition's fields, variants, backends, workload counts and "
                 "bench workloads");
  list->callback([] {
    if (list_json) {
      std::printf("%s\n", op_catalog_json().dump(2).c_str());
      return;
    }
    std::printf("%-28s %-10s %-4s %-9s %s\n", "op", "family", "lvl", "backends", "summary");
    for (const OpDef* d : OpRegistry::global().defs()) {
      std::string backends;
      if (OpRegistry::global().baseline(d->name, DeviceType::cpu)) backends += "cpu";
      if (OpRegistry::global().baseline(d->name, DeviceType::cuda)) backends += backends.empty() ? "cuda" : ",cuda";
      std::printf("%-28s %-10s %-4s %-9s %s\n", d->name.c_str(), d->family.c_str(), d->level.c_str(),
                  backends.c_str(), d->summary.c_str());
    }
  });

  auto* check = ops->add_subcommand("check", "Check every op (or one) on its test workloads against the f64 oracle");
  static std::string op_name, backend = "all";
  static uint64_t seed = 0;
  check->add_option("op", op_name, "Only this op");
  check->add_option("--backend", backend, "cpu, cuda or all (all = cpu plus cuda when a device exists)");
  check->add_option("--seed", seed, "Input seed (default: fresh random, printed)");
  static std::vector<std::string> check_variants;
  add_variant_option(check, check_variants);
  check->callback([] {
    select_variants(check_variants);
    uint64_t s = seed ? seed : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
    std::printf("seed %llu\n", static_cast<unsigned long long>(s));
    const std::string variants = OpRegistry::global().active_variants();
    if (!variants.empty()) std::printf("variants %s\n", variants.c_str());
    const int rc = run_check(op_name, backend, s);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
  setup_bench(ops);
  setup_variants(ops);
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
