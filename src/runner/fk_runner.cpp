// `fk-runner`: the process a candidate's code runs in on the CPU backend
// (harness/judge/runner_process.h). It is built from the few sources that load a library
// and serve its calls, not from the engine: no op's baseline, reference or registry is in
// its memory or its symbol table for a candidate to find and call.
#include <cstdio>

#include "harness/sandbox/runner_args.h"

int main(int argc, char** argv) {
  const auto a = fk::bench::parse_runner_args(argc, argv);
  if (!a || a->baseline) {
    std::fprintf(stderr,
                 "fk-runner serves a candidate's calls to an fk worker and is started by it:\n"
                 "  fk-runner kernels runner --channel N --arena N --op OP --dir D --library L\n");
    return 2;
  }
  fk::bench::serve_candidate_runner(*a);
}
