// Running a child process with a wall-clock limit, capturing its output. Used to compile
// candidates and to run each evaluation in its own worker process, so that a crash, hang
// or corrupted CUDA context of a candidate never takes the harness down.
#pragma once
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/sandbox/sandbox.h"

namespace fk::bench {

struct ProcessResult {
  int exit_code = -1;     // valid when exited
  int term_signal = 0;    // signal that ended it (0 if it exited)
  bool timed_out = false;
  bool stopped = false;   // ended by ProcessOptions::stop
  bool exited() const { return term_signal == 0 && !timed_out && !stopped; }
  std::string output;     // stdout and stderr, interleaved, truncated to max_output bytes
  double seconds = 0;
  std::string describe() const;  // "exit 1" / "killed by SIGSEGV" / "timed out after 60 s"
  // With ProcessOptions::sandbox: what the process ran in (SandboxSupport::describe(), plus
  // a note where it came out weaker), or why the sandbox could not be set up (then the
  // command never ran).
  std::string sandbox, sandbox_error;
};

struct ProcessOptions {
  double timeout_s = 60;
  size_t max_output = 1 << 20;
  std::string working_dir;                  // empty: inherit
  std::vector<std::string> extra_env;       // "NAME=value" added to the environment
  // Non-empty: only the inherited variables these names match are passed on (a name, or a
  // prefix ending in '*': "OMP_*"); extra_env is added either way.
  std::vector<std::string> keep_env;
  std::optional<SandboxOptions> sandbox;    // run it in the sandbox (sandbox.h), as far as the host allows
  std::function<void()> on_tick;            // called about every 100 ms while the child runs (may be empty)
  // File descriptors the child keeps open across exec (all others are close-on-exec here),
  // e.g. the socket and shared memory of a candidate runner.
  std::vector<int> inherit_fds;
  // Called once with the child's process id, right after it was started.
  std::function<void(int pid)> on_start;
  // Polled with on_tick: true ends the child's process group now (ProcessResult::stopped).
  std::function<bool()> stop;
};

// Runs argv[0] (searched in PATH) with the arguments. The child gets its own process
// group, killed as a whole on timeout; in a sandbox, its PID namespace dies with it.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& opts = {});

// Path of the running executable (/proc/self/exe).
std::string self_executable();

// What this process runs from, for a sandbox to keep visible when it lies in the temporary
// folder the sandbox replaces (a build under /tmp): the executable, every shared object
// loaded (the fk library of a test executable, the dependencies found through RUNPATH),
// and the LD_LIBRARY_PATH folders.
std::vector<std::filesystem::path> running_code_paths();

}  // namespace fk::bench
