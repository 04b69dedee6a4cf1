// The command line of a runner process (runner_loop.h), and its two programs: the
// candidate's runner, which holds the candidate's library and nothing of the engine
// (`fk-runner`, src/runner/), and the baseline's (`fk kernels runner --baseline`).
#pragma once
#include <optional>
#include <string>

namespace fk::bench {

struct RunnerArgs {
  int channel = -1, arena = -1;
  std::string op, library, dir, variants;
  bool baseline = false;
};

// `<program> kernels runner --channel N --arena N --op OP --dir D [--variants V]
// (--library L | --baseline)`; nullopt for any other command line, or one missing a part.
std::optional<RunnerArgs> parse_runner_args(int argc, char** argv);

// Serves the candidate's library (a.library): the sandbox's violation reporter and the
// plan guard's fault reporter write into a.dir before it is loaded. Never returns.
[[noreturn]] void serve_candidate_runner(const RunnerArgs& a);

// Either runner, the baseline's from the engine's registry (fk, and test executables).
[[noreturn]] void runner_main(const RunnerArgs& a);

// For executables other than fk that judge candidates (tests run themselves as the worker
// and its runners): when argv is a runner's command line, runs runner_main and does not
// return; otherwise returns.
void serve_as_runner_if_asked(int argc, char** argv);

// The program a candidate's runner runs: $FK_RUNNER, else `fk-runner` beside this
// executable, else this executable itself (a test's, which serves as runner too).
std::string candidate_runner_program();

}  // namespace fk::bench
