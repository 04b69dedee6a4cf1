#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "harness/judge/plan_guard.h"
#include "harness/sandbox/candidate.h"
#include "harness/sandbox/runner_args.h"
#include "harness/sandbox/runner_loop.h"
#include "harness/sandbox/seccomp_filter.h"

namespace fk::bench {

// What both runners do first: end with the worker that started them, whatever ends it;
// a forbidden system call ends the runner with its name on record; a plan's fault on a
// guard address leaves a finding (plan_guard.h).
void prepare_runner(const RunnerArgs& a) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  const std::filesystem::path dir = a.dir;
  install_violation_reporter((dir / "sandbox_violation").c_str());
  report_plan_guard_faults(open((dir / "findings.jsonl").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
}

void serve_candidate_runner(const RunnerArgs& a) {
  prepare_runner(a);
  std::unique_ptr<LoadedCandidate> cand;
  const int code = serve_runner(a.channel, a.arena, [&]() -> RunnerEntryPoints {
    mark_candidate_loaded();
    cand = LoadedCandidate::load(a.library, a.op);
    return {cand->run(), cand->plan()};
  });
  // Skip static destructors: the candidate's code may have left anything behind.
  std::fflush(nullptr);
  _exit(code);
}

}  // namespace fk::bench
