#include "harness/check/op_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "fk/element.h"
#include "fk/runtime.h"
#include "core/safetensors/safetensors.h"

namespace fk::bench {

namespace {


Tensor to_f64(const Tensor& t) {
  Tensor host = t.device().is_cpu() ? t : t.to(Device::cpu());
  Tensor out = Tensor::empty(host.shape(), DType::f64);
  const int64_t n = host.numel();
  for (int64_t i = 0; i < n; ++i) out.data_as<double>()[i] = load_element(host.view().element_ptr(i), host.dtype());
  return out;
}

// The largest finite value of a narrow float dtype; infinity for f64 and integer dtypes
// (whose outputs a reference value never overflows into infinity).
double largest_finite(DType t) {
  switch (t) {
    case DType::f32: return std::numeric_limits<float>::max();
    case DType::bf16: return bf16_to_float(0x7f7f);
    case DType::f16: return 65504.0;
    case DType::f8e4m3fn: return 448.0;
    case DType::f8e5m2: return 57344.0;
    default: return INFINITY;
  }
}

// x as the dtype stores it (round to nearest even; fp8 saturates to its largest finite).
double rounded_to(DType t, double x) {
  alignas(8) unsigned char buf[8] = {};
  store_element(buf, t, x);
  return load_element(buf, t);
}

}  // namespace

uint64_t fingerprint(const Tensor& t) {
  if (!t.defined()) return 0;  // an optional argument left out
  Tensor host = t.device().is_cpu() ? t : t.to(Device::cpu());
  return safetensors::content_hash64(host.data(), host.nbytes(), static_cast<uint64_t>(host.dtype()));
}

OpCase make_oracle_case(const OpDef& def, const OpCase& host_case) {
  OpCase o = host_case;  // shares input storage: the oracle must not write inputs
  for (size_t i = 0; i < def.tensor_args.size(); ++i) {
    const ArgRole role = def.tensor_args[i].role;
    const Tensor& t = host_case.tensors[i];
    if (!dtype_is_float(t.dtype())) {
      if (is_written(role) || role == ArgRole::workspace) o.tensors[i] = t.clone();
      continue;  // integer outputs stay integer (compared exactly)
    }
    if (role == ArgRole::inout) o.tensors[i] = to_f64(t);
    else if (role == ArgRole::out) o.tensors[i] = Tensor::empty(t.shape(), DType::f64);
    else if (role == ArgRole::workspace) o.tensors[i] = t.clone();
  }
  o.bind(def.tensor_args);
  return o;
}

void run_oracle(const OpDef& def, OpCase& oracle_case) {
  fk_op_fn ref = OpRegistry::global().baseline(def.name, DeviceType::cpu);
  FK_CHECK(ref != nullptr, "op ", def.name, " has no CPU reference");
  OpRegistry::global().plan(def.name, DeviceType::cpu, oracle_case.args_ptr(), nullptr);
  const fk_status s = ref(oracle_case.args_ptr(), nullptr);
  if (s != FK_OK) FK_FAIL(s, "CPU reference of ", def.name, " failed: ", last_error_message());
}

OpCase case_to_device(const OpDef& def, const OpCase& c, Device device) {
  OpCase d = c;
  for (size_t i = 0; i < d.tensors.size(); ++i) {
    Tensor& t = d.tensors[i];
    // Undefined: an optional argument left out (data == nullptr). Host-only tensors (plan
    // inputs and plan state) stay on the host but are copied too: a plan writes into them
    // (plan_info records the workspace it planned for), so two cases sharing one would run
    // on the other's plan.
    if (!t.defined()) continue;
    t = def.tensor_args[i].host_only ? t.clone() : t.to(device);
  }
  d.bind(def.tensor_args);
  return d;
}

void poison_outputs(const OpDef& def, OpCase& c, void* stream, bool workspace_too) {
  for (size_t i = 0; i < def.tensor_args.size(); ++i) {
    const ArgRole role = def.tensor_args[i].role;
    if (role != ArgRole::out && !(workspace_too && role == ArgRole::workspace)) continue;
    Tensor& t = c.tensors[i];
    rt::memset_async(t.data(), poison_byte(t.dtype()), t.nbytes(), t.device(), stream);
  }
  if (c.tensors.size() && c.tensors[0].device().is_cuda()) rt::stream_synchronize(stream);
}

uint8_t poison_byte(DType t) { return dtype_is_float(t) ? 0xFF : 0xA5; }

OutputError compare_output(const std::string& name, const Tensor& actual_any, const Tensor& oracle, Tolerance tol) {
  OutputError e;
  e.name = name;
  e.tol = tol;
  Tensor actual = actual_any.device().is_cpu() ? actual_any : actual_any.to(Device::cpu());
  e.numel = actual.numel();
  // One scan per slice of the elements, on threads for large outputs (a 16384 x 14336
  // output took 8 s a round on one core); slices merge in index order, so the worst
  // element is the first of the largest excess, as a single scan finds it.
  const double overflow_above = largest_finite(actual.dtype());
  struct Partial {
    int64_t num_bad = 0, num_nonfinite = 0, worst_index = -1;
    double max_abs = 0, max_rel = 0, err_sq = 0, ref_sq = 0, worst_excess = -1, worst_value = 0, worst_ref = 0;
  };
  auto scan = [&](int64_t begin, int64_t end) {
    Partial p;
    for (int64_t i = begin; i < end; ++i) {
      const double x = load_element(actual.view().element_ptr(i), actual.dtype());
      double r = load_element(oracle.view().element_ptr(i), oracle.dtype());
      // An exact value beyond the output dtype's largest rounds to infinity there: that is
      // the right output, and a finite one is not.
      if (std::fabs(r) > overflow_above) r = rounded_to(actual.dtype(), r);
      if (!std::isfinite(r)) {  // an infinite or NaN reference: demand the same value (NaN: any NaN)
        if (!(std::isnan(r) ? std::isnan(x) : x == r)) ++p.num_bad;
        continue;
      }
      if (!std::isfinite(x)) {
        ++p.num_nonfinite;
        ++p.num_bad;
        if (p.worst_excess < INFINITY) {
          p.worst_excess = INFINITY;
          p.worst_index = i, p.worst_value = x, p.worst_ref = r;
        }
        continue;
      }
      const double d = std::fabs(x - r);
      const double bound = tol.atol + tol.rtol * std::fabs(r);
      p.err_sq += d * d;
      p.ref_sq += r * r;
      p.max_abs = std::max(p.max_abs, d);
      p.max_rel = std::max(p.max_rel, d / std::max(std::fabs(r), std::max(tol.atol, 1e-300)));
      if (d > bound) ++p.num_bad;
      if (d - bound > p.worst_excess) {
        p.worst_excess = d - bound;
        p.worst_index = i, p.worst_value = x, p.worst_ref = r;
      }
    }
    return p;
  };
  constexpr int64_t kPerThread = int64_t{1} << 22;
  const int64_t threads = std::clamp<int64_t>(e.numel / kPerThread, 1, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<Partial> parts(static_cast<size_t>(threads));
  if (threads == 1) {
    parts[0] = scan(0, e.numel);
  } else {
    std::vector<std::thread> pool;
    for (int64_t t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { parts[static_cast<size_t>(t)] = scan(e.numel * t / threads, e.numel * (t + 1) / threads); });
    for (auto& th : pool) th.join();
  }
  double worst_excess = -1, err_sq = 0, ref_sq = 0;
  for (const Partial& p : parts) {
    e.num_bad += p.num_bad;
    e.num_nonfinite += p.num_nonfinite;
    e.max_abs_err = std::max(e.max_abs_err, p.max_abs);
    e.max_rel_err = std::max(e.max_rel_err, p.max_rel);
    err_sq += p.err_sq;
    ref_sq += p.ref_sq;
    if (p.worst_index >= 0 && p.worst_excess > worst_excess) {
      worst_excess = p.worst_excess;
      e.worst_index = p.worst_index, e.worst_value = p.worst_value, e.worst_ref = p.worst_ref;
    }
  }
  e.rel_l2_err = ref_sq > 0 ? std::sqrt(err_sq / ref_sq) : std::sqrt(err_sq);
  return e;
}

std::string describe_output_error(const OutputError& e) {
  return concat("output '", e.name, "': ", e.num_bad, " of ", e.numel, " elements outside tolerance (",
                e.num_nonfinite, " non-finite); worst at index ", e.worst_index, ": got ", e.worst_value,
                ", expected ", e.worst_ref, "; max abs err ", e.max_abs_err, ", rel L2 err ", e.rel_l2_err,
                " (atol ", e.tol.atol, ", rtol ", e.tol.rtol, "); ");
}

CheckResult check_op(const OpDef& def, const Json& workload, uint64_t seed, DeviceType backend, fk_op_fn impl) {
  CheckResult res;
  if (!impl) impl = OpRegistry::global().active(def.name, backend);
  FK_CHECK(impl != nullptr, "op ", def.name, " has no implementation for this backend");

  OpCase host = def.make_case(workload, seed);
  OpCase oracle = make_oracle_case(def, host);
  run_oracle(def, oracle);

  const Device dev = backend == DeviceType::cpu ? Device::cpu() : Device::cuda(0);
  OpCase test = case_to_device(def, host, dev);
  std::vector<uint64_t> before(def.tensor_args.size(), 0);
  for (size_t i = 0; i < def.tensor_args.size(); ++i)
    if (def.tensor_args[i].role == ArgRole::in) before[i] = fingerprint(test.tensors[i]);
  poison_outputs(def, test);  // before the plan: a plan may fill workspace tensors
  OpRegistry::global().plan(def.name, backend, test.args_ptr(), nullptr);

  const fk_status s = impl(test.args_ptr(), nullptr);
  if (s != FK_OK) {
    res.message = concat(status_name(s), ": ", last_error_message());
    return res;
  }
  if (dev.is_cuda()) rt::device_synchronize(0);

  std::string why;
  for (size_t i = 0; i < def.tensor_args.size(); ++i) {
    const TensorArg& arg = def.tensor_args[i];
    if (arg.role == ArgRole::in && fingerprint(test.tensors[i]) != before[i]) {
      res.inputs_unchanged = false;
      why += concat("input '", arg.name, "' was modified; ");
    }
    if (!is_written(arg.role) || def.check_outputs) continue;
    const DType dt = test.tensors[i].dtype();
    const Tolerance tol = def.tolerance ? def.tolerance(host, arg, dt) : default_tolerance(dt);
    OutputError e = compare_output(arg.name, test.tensors[i], oracle.tensors[i], tol);
    if (e.num_bad > 0) why += describe_output_error(e);
    res.outputs.push_back(std::move(e));
  }
  if (def.check_outputs) {
    OpCase actual = case_to_device(def, test, Device::cpu());
    const std::string custom = def.check_outputs(host, oracle, actual);
    if (!custom.empty()) why += custom;
  }
  res.passed = why.empty();
  res.message = why;
  return res;
}

}  // namespace fk::bench
