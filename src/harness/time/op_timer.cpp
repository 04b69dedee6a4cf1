#include "harness/time/op_timer.h"

#include <algorithm>
#include <cmath>

#include "harness/check/op_check.h"
#include "fk/status.h"

namespace fk::bench {

int choose_num_sets(size_t set_bytes, size_t l2_bytes, size_t memory_budget, int max_sets) {
  if (set_bytes == 0) return 1;
  const double wanted = std::ceil(2.0 * static_cast<double>(l2_bytes) / static_cast<double>(set_bytes));
  const double fits = std::floor(static_cast<double>(memory_budget) / static_cast<double>(set_bytes));
  const double n = std::min({wanted, fits, static_cast<double>(std::max(max_sets, 1))});
  return std::max(1, static_cast<int>(n));
}

std::vector<OpCase> make_device_sets(const OpDef& def, const OpCase& host, Device device, int num_sets) {
  FK_CHECK(num_sets >= 1, "need at least one input set, got ", num_sets);
  std::vector<OpCase> sets;
  sets.reserve(static_cast<size_t>(num_sets));
  // The same placement rules as the checks: host-only plan inputs stay on the CPU and
  // left-out optional arguments stay undefined.
  sets.push_back(case_to_device(def, host, device));
  for (int i = 1; i < num_sets; ++i) {
    OpCase c = sets.front();
    for (auto& t : c.tensors)
      if (t.defined()) t = t.clone();  // device-to-device (host-only ones host-to-host)
    c.bind(def.tensor_args);
    sets.push_back(std::move(c));
  }
  return sets;
}

void finish_result(OpBenchResult& r, const DeviceCeilings* ceilings) {
  r.us = summarize(r.samples_us);
  const double seconds = r.us.median * 1e-6;
  if (seconds <= 0) return;
  r.gbps = r.cost.bytes / seconds / 1e9;
  r.tflops = r.cost.flops / seconds / 1e12;
  if (ceilings) {
    const SpeedOfLight sol = speed_of_light(r.cost, *ceilings);
    r.sol = sol.seconds() / seconds;
    r.sol_bound = sol.bound();
    r.bandwidth_fraction = sol.memory_s / seconds;
    if (sol.compute_s > 0) r.compute_fraction = sol.compute_s / seconds;
  }
}

OpBenchResult bench_op(const OpDef& def, const Json& workload, DeviceTimer& timer, const OpBenchOptions& options,
                       const DeviceCeilings* ceilings) {
  OpBenchResult r;
  r.op = def.name;
  r.workload = workload;
  OpRegistry& reg = OpRegistry::global();
  fk_op_fn fn = reg.active(def.name, DeviceType::cuda);
  FK_CHECK(fn != nullptr, "op ", def.name, " has no CUDA implementation");
  r.implementation = reg.active_origin(def.name, DeviceType::cuda);

  const OpCase host = def.make_case(workload, options.seed);
  FK_CHECK(def.cost != nullptr, "op ", def.name, " has no cost model");
  r.cost = def.cost(host);
  for (const Tensor& t : host.tensors) r.set_bytes += t.nbytes();
  const auto budget = static_cast<size_t>(options.memory_fraction * static_cast<double>(timer.free_memory()));
  r.num_sets = choose_num_sets(r.set_bytes, timer.l2_bytes(), budget, options.max_sets);

  std::vector<OpCase> sets = make_device_sets(def, host, Device::cuda(timer.device()), r.num_sets);
  // Planning is host-side scheduling done once per metadata change: not timed.
  for (OpCase& s : sets) reg.plan(def.name, DeviceType::cuda, s.args_ptr(), timer.stream());

  const std::string& name = def.name;
  r.samples_us = timer.time(
      [&](int set, void* stream) {
        const fk_status st = fn(sets[static_cast<size_t>(set)].args_ptr(), stream);
        if (st != FK_OK) FK_FAIL(st, "op ", name, " failed: ", last_error_message());
      },
      r.num_sets);
  finish_result(r, ceilings);
  return r;
}

}  // namespace fk::bench
