// A runner process's side of the judge's calls (runner_channel.h): it holds one op
// implementation, a candidate's or the baseline's, and nothing of the evaluation: no
// request, no seeds, no reference, no other implementation's outputs, no result file.
// The judge (runner_process.h) copies each call's tensors into the shared arena, sends the
// argument struct and reads the outputs back once the reply came; it times the call from
// its own side, so nothing the runner says about time is believed.
#pragma once
#include <functional>
#include <string>

#include "fk/op.h"

namespace fk::bench {

struct RunnerEntryPoints {
  fk_op_fn run = nullptr;
  fk_op_fn plan = nullptr;  // may be null
};

// Says hello (with this process's plan guard), loads the implementation through `load`
// (which throws fk::Error when it cannot), then serves map, run and plan requests until
// the judge closes the channel. Returns the process's exit status.
int serve_runner(int channel, int arena_fd, const std::function<RunnerEntryPoints()>& load);

}  // namespace fk::bench

