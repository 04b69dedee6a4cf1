// `fk ops list | check`: the op catalog, and every op on every backend against the
// double-precision oracle.
#include <chrono>
#include <cstdio>
#include <random>

#include "bench/op_check.h"
#include "cli/command.h"
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

void setup(CLI::App& app) {
  auto* ops = app.add_subcommand("ops", "The op catalog: list ops, check them against the oracle");
  ops->require_subcommand(1);

  auto* list = ops->add_subcommand("list", "List every op with its family, level and backends");
  list->callback([] {
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
  check->callback([] {
    uint64_t s = seed ? seed : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
    std::printf("seed %llu\n", static_cast<unsigned long long>(s));
    const int rc = run_check(op_name, backend, s);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
