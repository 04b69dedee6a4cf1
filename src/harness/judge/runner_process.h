// The judge's side of a runner (runner_loop.h): a child process, sandboxed on its own
// (SandboxOptions::nested: Landlock confines its files to its own folder, which lies
// inside the worker's, so the worker's request and result files are out of its reach; the
// seccomp filter), holding one op implementation: the candidate's library, or the
// baseline. The worker that judges starts one for each and never loads candidate code
// itself, so nothing a candidate does in its process reaches the inputs' seeds, the
// references, the other implementation's outputs or the verdict.
//
// Each call is a request and its reply over a socket; a runner that dies or breaks the
// channel makes the next request throw RunnerFailure, with what ended it: a system call
// the sandbox forbids (REWARD_HACK), a plan that read data it is not given (REWARD_HACK),
// or a crash (RUNTIME_ERROR).
#pragma once
#include <time.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "harness/judge/verdict.h"
#include "harness/sandbox/runner_channel.h"
#include "harness/sandbox/subprocess.h"

namespace fk::bench {

struct RunnerSpec {
  std::string op;
  std::filesystem::path library;  // the candidate's shared library; empty: the op's baseline
  std::filesystem::path dir;      // the runner's own folder (created), inside the worker's
  std::string variants;           // the baselines' kernel variants (OpRegistry spec)
  std::vector<std::filesystem::path> visible;  // what the runner runs from (SandboxOptions::visible)
  double timeout_s = 60;
};

// A runner that is gone, and how it ended.
struct RunnerFailure {
  Verdict verdict;
  std::string message;
};

class RunnerProcess {
 public:
  // Starts the runner and waits for it to load the implementation. Throws RunnerFailure
  // when it does not come up (HARNESS_ERROR: the sandbox or the process failed, before any
  // candidate code ran); a library that does not load is load_error(), not a throw.
  explicit RunnerProcess(RunnerSpec spec);
  ~RunnerProcess();
  RunnerProcess(const RunnerProcess&) = delete;
  RunnerProcess& operator=(const RunnerProcess&) = delete;

  const std::string& load_error() const { return load_error_; }  // "" when loaded
  bool has_plan() const { return has_plan_; }
  std::byte* guard() const { return guard_; }  // the runner's plan guard region
  int arena_fd() const { return arena_fd_; }
  int pid() const { return pid_.load(); }

  struct Reply {
    int32_t status = 0;
    uint64_t value = 0;
    std::string text;
    // From the request's send to the reply's (the kernel's stamp on it, so the judge's own
    // wake-up is not counted), in microseconds.
    double us = 0;
    // Of a timed request (`spin`), from just before the request to just after its reply,
    // as the kernel counts them (the runner can alter neither), in microseconds: the CPU
    // time of the runner's threads, all of them, and how long its requests' thread was
    // ready to run but waited for a processor (schedstat's run_delay). -1: not known.
    double cpu_us = -1;
    double waited_us = -1;
  };
  // One request and its reply. Throws RunnerFailure when the runner is gone.
  // `spin`: poll for the reply without sleeping (a timed call): the outputs are copied out
  // the moment the reply is sent, so a runner that replies before its work is done has no
  // time to finish it unseen while the worker wakes.
  Reply request(RunnerMessage kind, uint64_t value, const void* payload = nullptr, size_t bytes = 0,
                bool spin = false);
  // Has the runner map the arena (already sized to `bytes`); returns the runner's address.
  uint64_t map_arena(uint64_t bytes);

  // CPU seconds each thread of the runner has used so far, by thread id
  // (/proc/<pid>/task/<tid>/schedstat: nanoseconds, not the scheduler ticks of the
  // process clock an armed CPU-time limit gives).
  std::map<int, double> cpu_seconds_by_thread() const;

 private:
  [[noreturn]] void fail_gone(const std::string& when);
  RunnerHeader receive(std::string& text, const char* expecting, int64_t* sent_ns = nullptr, bool spin = false);

  RunnerSpec spec_;
  int channel_ = -1, arena_fd_ = -1;
  // From the first timed request: the runner's process CPU clock, and the schedstat file of
  // its main thread (the one that serves requests).
  std::optional<clockid_t> cpu_clock_;
  int schedstat_ = -1;
  std::atomic<int> pid_{0};
  std::atomic<bool> stop_{false}, done_{false};
  ProcessResult result_;
  std::thread supervisor_;
  std::string load_error_;
  bool has_plan_ = false;
  std::byte* guard_ = nullptr;
};

}  // namespace fk::bench
