#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <filesystem>
#include <memory>

#include "fk/op_registry.h"
#include "harness/judge/plan_guard.h"
#include "harness/sandbox/candidate.h"
#include "harness/sandbox/runner_loop.h"
#include "harness/sandbox/seccomp_filter.h"

namespace fk::bench {

void runner_main(const RunnerArgs& a) {
  // Ends with the worker that started it, whatever ends the worker.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  const std::filesystem::path dir = a.dir;
  // Before any candidate code is loaded, as in the worker (worker.h): a forbidden system
  // call ends the runner with its name on record, and a plan's fault on a guard address
  // leaves a finding.
  install_violation_reporter((dir / "sandbox_violation").c_str());
  report_plan_guard_faults(open((dir / "findings.jsonl").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  std::unique_ptr<LoadedCandidate> cand;
  const int code = serve_runner(a.channel, a.arena, [&]() -> RunnerEntryPoints {
    if (a.baseline) {
      OpRegistry& reg = OpRegistry::global();
      for (const OpVariantInfo& v : reg.variants()) reg.select_variants(v.op, {});
      reg.select_variants_from_string(a.variants);
      const fk_op_fn run = reg.baseline(a.op, DeviceType::cpu);
      FK_CHECK(run != nullptr, "op ", a.op, " has no CPU baseline");
      return {run, reg.active_plan(a.op, DeviceType::cpu)};
    }
    mark_candidate_loaded();
    cand = LoadedCandidate::load(a.library, a.op);
    return {cand->run(), cand->plan()};
  });
  // Skip static destructors: the candidate's code may have left anything behind.
  std::fflush(nullptr);
  _exit(code);
}

void serve_as_runner_if_asked(int argc, char** argv) {
  if (argc < 3 || std::strcmp(argv[1], "kernels") != 0 || std::strcmp(argv[2], "runner") != 0) return;
  RunnerArgs a;
  for (int i = 3; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--baseline") {
      a.baseline = true;
      continue;
    }
    if (i + 1 >= argc) break;
    const std::string value = argv[++i];
    if (flag == "--channel") a.channel = std::stoi(value);
    else if (flag == "--arena") a.arena = std::stoi(value);
    else if (flag == "--op") a.op = value;
    else if (flag == "--dir") a.dir = value;
    else if (flag == "--variants") a.variants = value;
    else if (flag == "--library") a.library = value;
  }
  runner_main(a);
}

}  // namespace fk::bench
