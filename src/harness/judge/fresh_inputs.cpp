#include "harness/judge/fresh_inputs.h"

#include <algorithm>
#include <cmath>

#include "fk/element.h"
#include "fk/philox.h"
#include "fk/random.h"
#include "fk/status.h"

namespace fk::bench {

std::vector<FreshInputRange> fresh_input_ranges(const OpDef& def, const OpCase& host) {
  FK_CHECK(host.tensors.size() == def.tensor_args.size(), "case of ", def.name, " has ", host.tensors.size(),
           " tensors, the op declares ", def.tensor_args.size());
  std::vector<FreshInputRange> out(def.tensor_args.size());
  for (size_t a = 0; a < def.tensor_args.size(); ++a) {
    const TensorArg& arg = def.tensor_args[a];
    const Tensor& t = host.tensors[a];
    if ((arg.role != ArgRole::in && arg.role != ArgRole::inout) || arg.host_only || !t.defined() ||
        !dtype_is_float(t.dtype()) || !t.view().is_contiguous() || t.numel() < 2 || !t.device().is_cpu())
      continue;
    double lo = INFINITY, hi = -INFINITY, sum = 0, sum_sq = 0;
    bool finite = true;
    for (int64_t i = 0; i < t.numel() && finite; ++i) {
      const double v = load_element(t.view().element_ptr(i), t.dtype());
      finite = std::isfinite(v);
      lo = std::min(lo, v), hi = std::max(hi, v);
      sum += v, sum_sq += v * v;
    }
    if (!finite) continue;
    // Uniform with the checked values' mean and standard deviation (a uniform draw over
    // [a, b] gives back [a, b]), inside their [min, max] (signs stay): values of the same
    // scale, so errors against the tolerance stay what the checks saw.
    const auto n = static_cast<double>(t.numel());
    const double mean = sum / n, sd = std::sqrt(std::max(0.0, sum_sq / n - mean * mean));
    lo = std::max(lo, mean - std::sqrt(3.0) * sd);
    hi = std::min(hi, mean + std::sqrt(3.0) * sd);
    // fill_uniform needs finite bounds with a finite width in float.
    const auto flo = static_cast<float>(lo), fhi = static_cast<float>(hi);
    if (!(flo < fhi) || !std::isfinite(fhi - flo)) continue;
    out[a] = {true, flo, fhi};
  }
  return out;
}

int keep_large_inputs(std::vector<FreshInputRange>& ranges, const OpCase& host, size_t max_bytes) {
  FK_CHECK(ranges.size() == host.tensors.size(), "fresh input ranges for ", ranges.size(), " tensors, case has ",
           host.tensors.size());
  bool small_refilled = false;
  for (size_t a = 0; a < ranges.size(); ++a) small_refilled |= ranges[a].refill && host.tensors[a].nbytes() <= max_bytes;
  if (!small_refilled) return 0;
  int kept = 0;
  for (size_t a = 0; a < ranges.size(); ++a)
    if (ranges[a].refill && host.tensors[a].nbytes() > max_bytes) ranges[a].refill = false, ++kept;
  return kept;
}

void write_fresh_inputs(const std::vector<FreshInputRange>& ranges, const OpCase& c, uint64_t seed, void* stream) {
  FK_CHECK(ranges.size() == c.tensors.size(), "fresh input ranges for ", ranges.size(), " tensors, case has ",
           c.tensors.size());
  for (size_t a = 0; a < ranges.size(); ++a)
    if (ranges[a].refill) fill_uniform(c.tensors[a].view(), seed, a, ranges[a].lo, ranges[a].hi, stream);
}

uint64_t timed_call_seed(uint64_t secret, int call) {
  constexpr uint64_t kTimedSeeds = 0x7f3e;  // a Philox stream of its own
  const auto i = static_cast<uint64_t>(call);
  return static_cast<uint64_t>(philox_u32(secret, kTimedSeeds, 2 * i)) << 32 | philox_u32(secret, kTimedSeeds, 2 * i + 1);
}

}  // namespace fk::bench
