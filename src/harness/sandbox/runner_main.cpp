#include <unistd.h>

#include <cstdio>

#include "fk/op_registry.h"
#include "harness/sandbox/runner_args.h"
#include "harness/sandbox/runner_loop.h"

namespace fk::bench {

void prepare_runner(const RunnerArgs& a);  // runner_candidate.cpp

void runner_main(const RunnerArgs& a) {
  if (!a.baseline) serve_candidate_runner(a);
  prepare_runner(a);
  const int code = serve_runner(a.channel, a.arena, [&]() -> RunnerEntryPoints {
    OpRegistry& reg = OpRegistry::global();
    for (const OpVariantInfo& v : reg.variants()) reg.select_variants(v.op, {});
    reg.select_variants_from_string(a.variants);
    const fk_op_fn run = reg.baseline(a.op, DeviceType::cpu);
    FK_CHECK(run != nullptr, "op ", a.op, " has no CPU baseline");
    return {run, reg.active_plan(a.op, DeviceType::cpu)};
  });
  std::fflush(nullptr);
  _exit(code);
}

void serve_as_runner_if_asked(int argc, char** argv) {
  if (const auto a = parse_runner_args(argc, argv)) runner_main(*a);
}

}  // namespace fk::bench
