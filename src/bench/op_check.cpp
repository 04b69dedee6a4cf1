#include "bench/op_check.h"

#include <cmath>
#include <cstring>

#include "fk/element.h"
#include "fk/runtime.h"
#include "fk/safetensors.h"

namespace fk::bench {

namespace {

bool is_written(ArgRole r) { return r == ArgRole::out || r == ArgRole::inout; }

Tensor to_f64(const Tensor& t) {
  Tensor host = t.device().is_cpu() ? t : t.to(Device::cpu());
  Tensor out = Tensor::empty(host.shape(), DType::f64);
  const int64_t n = host.numel();
  for (int64_t i = 0; i < n; ++i) out.data_as<double>()[i] = load_element(host.view().element_ptr(i), host.dtype());
  return out;
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
    // Undefined: an optional argument left out (data == nullptr). Host-only: plan inputs.
    if (t.defined() && !def.tensor_args[i].host_only) t = t.to(device);
  }
  d.bind(def.tensor_args);
  return d;
}

void poison_outputs(const OpDef& def, OpCase& c, void* stream, bool workspace_too) {
  for (size_t i = 0; i < def.tensor_args.size(); ++i) {
    const ArgRole role = def.tensor_args[i].role;
    if (role != ArgRole::out && !(workspace_too && role == ArgRole::workspace)) continue;
    Tensor& t = c.tensors[i];
    rt::memset_async(t.data(), dtype_is_float(t.dtype()) ? 0xFF : 0xA5, t.nbytes(), t.device(), stream);
  }
  if (c.tensors.size() && c.tensors[0].device().is_cuda()) rt::stream_synchronize(stream);
}

OutputError compare_output(const std::string& name, const Tensor& actual_any, const Tensor& oracle, Tolerance tol) {
  OutputError e;
  e.name = name;
  e.tol = tol;
  Tensor actual = actual_any.device().is_cpu() ? actual_any : actual_any.to(Device::cpu());
  e.numel = actual.numel();
  double worst_excess = -1;
  double err_sq = 0, ref_sq = 0;
  for (int64_t i = 0; i < e.numel; ++i) {
    const double x = load_element(actual.view().element_ptr(i), actual.dtype());
    const double r = load_element(oracle.view().element_ptr(i), oracle.dtype());
    if (!std::isfinite(r)) {  // the oracle itself overflowed: demand the same class of value
      if (!(std::isnan(r) ? std::isnan(x) : x == r)) ++e.num_bad;
      continue;
    }
    if (!std::isfinite(x)) {
      ++e.num_nonfinite;
      ++e.num_bad;
      if (worst_excess < INFINITY) {
        worst_excess = INFINITY;
        e.worst_index = i, e.worst_value = x, e.worst_ref = r;
      }
      continue;
    }
    const double d = std::fabs(x - r);
    const double bound = tol.atol + tol.rtol * std::fabs(r);
    err_sq += d * d;
    ref_sq += r * r;
    e.max_abs_err = std::max(e.max_abs_err, d);
    e.max_rel_err = std::max(e.max_rel_err, d / std::max(std::fabs(r), std::max(tol.atol, 1e-300)));
    if (d > bound) ++e.num_bad;
    if (d - bound > worst_excess) {
      worst_excess = d - bound;
      e.worst_index = i, e.worst_value = x, e.worst_ref = r;
    }
  }
  e.rel_l2_err = ref_sq > 0 ? std::sqrt(err_sq / ref_sq) : std::sqrt(err_sq);
  return e;
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
    if (e.num_bad > 0) {
      why += concat("output '", arg.name, "': ", e.num_bad, " of ", e.numel, " elements outside tolerance (",
                    e.num_nonfinite, " non-finite); worst at index ", e.worst_index, ": got ", e.worst_value,
                    ", expected ", e.worst_ref, "; max abs err ", e.max_abs_err, ", rel L2 err ", e.rel_l2_err,
                    " (atol ", tol.atol, ", rtol ", tol.rtol, "); ");
    }
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
