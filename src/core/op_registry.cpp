#include "fk/op_registry.h"

#include "fk/runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fk {

std::string_view role_name(ArgRole r) {
  switch (r) {
    case ArgRole::in: return "in";
    case ArgRole::out: return "out";
    case ArgRole::inout: return "inout";
    case ArgRole::workspace: return "workspace";
  }
  return "?";
}

Tolerance default_tolerance(DType t) {
  switch (t) {
    case DType::f64: return {1e-12, 1e-12};
    case DType::f32: return {1e-5, 1e-5};
    case DType::f16: return {1e-3, 2e-3};
    case DType::bf16: return {1e-2, 1.6e-2};
    case DType::f8e4m3fn: return {3e-2, 1.25e-1};
    case DType::f8e5m2: return {6e-2, 2.5e-1};
    default: return {0, 0};  // integers and bool compare exactly
  }
}

void OpCase::bind(const std::vector<TensorArg>& layout) {
  FK_CHECK(tensors.size() == layout.size(), "case has ", tensors.size(), " tensors, op declares ", layout.size());
  for (size_t i = 0; i < layout.size(); ++i) {
    FK_CHECK(layout[i].offset + sizeof(TensorView) <= args.size(), "tensor arg ", layout[i].name,
             " lies outside the argument struct");
    TensorView v = tensors[i].view();
    std::memcpy(args.data() + layout[i].offset, &v, sizeof(TensorView));
  }
}

OpRegistry& OpRegistry::global() {
  static OpRegistry* r = new OpRegistry();  // never destroyed: used from static destructors
  return *r;
}

void OpRegistry::define(OpDef def) {
  std::lock_guard lk(mu_);
  FK_CHECK(!def.name.empty(), "op definition without a name");
  FK_CHECK(!defs_.contains(def.name), "op ", def.name, " defined twice");
  FK_CHECK(def.make_case != nullptr, "op ", def.name, " has no make_case");
  auto name = def.name;
  defs_.emplace(std::move(name), std::move(def));
}

bool OpRegistry::has(std::string_view name) const {
  std::lock_guard lk(mu_);
  return defs_.find(name) != defs_.end();
}

const OpDef& OpRegistry::def(std::string_view name) const {
  std::lock_guard lk(mu_);
  auto it = defs_.find(name);
  if (it == defs_.end()) {
    std::string known;
    for (const auto& [n, d] : defs_) known += (known.empty() ? "" : ", ") + n;
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "unknown op '", name, "' (known: ", known, ")");
  }
  return it->second;
}

std::vector<const OpDef*> OpRegistry::defs() const {
  std::lock_guard lk(mu_);
  std::vector<const OpDef*> out;
  for (const auto& [n, d] : defs_) out.push_back(&d);
  return out;
}

void OpRegistry::set_baseline(std::string_view name, DeviceType backend, fk_op_fn fn) {
  std::lock_guard lk(mu_);
  auto& impl = impls_[std::string(name)];
  const int b = static_cast<int>(backend);
  FK_CHECK(impl.baseline[b] == nullptr, "baseline of ", name, " registered twice for one backend");
  impl.baseline[b] = fn;
  if (impl.active[b] == nullptr) impl.active[b] = fn;
}

void OpRegistry::install(std::string_view name, DeviceType backend, fk_op_fn fn, std::string origin) {
  std::lock_guard lk(mu_);
  FK_CHECK(fn != nullptr, "install of a null implementation for ", name);
  FK_CHECK(defs_.find(name) != defs_.end(), "install for unknown op '", name, "'");
  auto& impl = impls_[std::string(name)];
  const int b = static_cast<int>(backend);
  impl.active[b] = fn;
  impl.origin[b] = std::move(origin);
}

void OpRegistry::reset(std::string_view name, DeviceType backend) {
  std::lock_guard lk(mu_);
  auto it = impls_.find(name);
  if (it == impls_.end()) return;
  const int b = static_cast<int>(backend);
  it->second.active[b] = it->second.baseline[b];
  it->second.active_plan[b] = it->second.baseline_plan[b];
  it->second.origin[b] = "baseline";
}

void OpRegistry::set_baseline_plan(std::string_view name, DeviceType backend, fk_op_fn plan) {
  std::lock_guard lk(mu_);
  auto& impl = impls_[std::string(name)];
  const int b = static_cast<int>(backend);
  FK_CHECK(impl.baseline_plan[b] == nullptr, "plan of ", name, " registered twice for one backend");
  impl.baseline_plan[b] = plan;
  if (impl.active_plan[b] == nullptr) impl.active_plan[b] = plan;
}

void OpRegistry::install_plan(std::string_view name, DeviceType backend, fk_op_fn plan) {
  std::lock_guard lk(mu_);
  FK_CHECK(defs_.find(name) != defs_.end(), "install_plan for unknown op '", name, "'");
  impls_[std::string(name)].active_plan[static_cast<int>(backend)] = plan;
}

fk_op_fn OpRegistry::active_plan(std::string_view name, DeviceType backend) const {
  std::lock_guard lk(mu_);
  auto it = impls_.find(name);
  return it == impls_.end() ? nullptr : it->second.active_plan[static_cast<int>(backend)];
}

void OpRegistry::plan(std::string_view name, DeviceType backend, const void* args, void* stream) const {
  fk_op_fn fn = active_plan(name, backend);
  if (fn == nullptr) return;
  const std::string pending = rt::take_pending_error();
  if (!pending.empty())
    FK_FAIL(FK_ERR_CUDA, "a CUDA error was pending before the plan of op '", name, "' (earlier work left it): ",
            pending);
  const fk_status s = fn(args, stream);
  if (s != FK_OK)
    FK_FAIL(s, "plan of op '", name, "' (", active_origin(name, backend), ") failed with ", status_name(s), ": ",
            last_error_message());
  const std::string left = rt::take_pending_error();
  if (!left.empty())
    FK_FAIL(FK_ERR_CUDA, "the plan of op '", name, "' returned success but left a CUDA error: ", left);
}

fk_op_fn OpRegistry::active(std::string_view name, DeviceType backend) const {
  std::lock_guard lk(mu_);
  auto it = impls_.find(name);
  return it == impls_.end() ? nullptr : it->second.active[static_cast<int>(backend)];
}

fk_op_fn OpRegistry::baseline(std::string_view name, DeviceType backend) const {
  std::lock_guard lk(mu_);
  auto it = impls_.find(name);
  return it == impls_.end() ? nullptr : it->second.baseline[static_cast<int>(backend)];
}

std::string OpRegistry::active_origin(std::string_view name, DeviceType backend) const {
  std::lock_guard lk(mu_);
  auto it = impls_.find(name);
  return it == impls_.end() ? "none" : it->second.origin[static_cast<int>(backend)];
}

void OpRegistry::set_gpu_reference(std::string_view name, fk_op_fn fn) {
  std::lock_guard lk(mu_);
  FK_CHECK(fn != nullptr, "null GPU reference for ", name);
  FK_CHECK(!gpu_references_.contains(name), "GPU reference of ", name, " registered twice");
  gpu_references_.emplace(std::string(name), fn);
}

fk_op_fn OpRegistry::gpu_reference(std::string_view name) const {
  std::lock_guard lk(mu_);
  auto it = gpu_references_.find(name);
  return it == gpu_references_.end() ? nullptr : it->second;
}

namespace {

// FK_OP_TRACE=1: every op call is printed to stderr with its tensors before it runs (with
// CUDA_LAUNCH_BLOCKING=1, the last line names the call that failed).
bool op_trace_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("FK_OP_TRACE");
    return v && *v && std::string_view(v) != "0";
  }();
  return on;
}

void trace_call(const OpDef& def, DeviceType backend, const void* args) {
  std::string line = concat("[fk op] ", def.name, " (", backend == DeviceType::cpu ? "cpu" : "cuda", ")");
  for (const TensorArg& a : def.tensor_args) {
    TensorView v;
    std::memcpy(&v, static_cast<const std::byte*>(args) + a.offset, sizeof(v));
    if (v.data == nullptr) continue;
    line += concat(" ", a.name, "=", describe(v), " strides ", shape_to_string(v.strides, v.rank));
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace

void OpRegistry::set_call_observer(CallObserver observer) {
  std::lock_guard lk(mu_);
  observer_ = std::move(observer);
}

void OpRegistry::call(std::string_view name, DeviceType backend, const void* args, void* stream) const {
  if (op_trace_enabled()) trace_call(def(name), backend, args);
  if (!observer_) return call_unobserved(name, backend, args, stream);
  const bool cuda = backend == DeviceType::cuda;  // CPU ops are synchronous
  if (cuda) rt::stream_synchronize(stream);
  const auto t0 = std::chrono::steady_clock::now();
  call_unobserved(name, backend, args, stream);
  if (cuda) rt::stream_synchronize(stream);
  observer_(def(name), backend, args, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

void OpRegistry::call_unobserved(std::string_view name, DeviceType backend, const void* args, void* stream) const {
  fk_op_fn fn = active(name, backend);
  if (fn == nullptr)
    FK_FAIL(FK_ERR_UNSUPPORTED, "op '", name, "' has no ", backend == DeviceType::cpu ? "cpu" : "cuda",
            " implementation");
  if (backend == DeviceType::cuda) {
    const std::string pending = rt::take_pending_error();
    if (!pending.empty())
      FK_FAIL(FK_ERR_CUDA, "a CUDA error was pending before op '", name, "' ran (earlier work left it): ", pending);
  }
  const fk_status s = fn(args, stream);
  if (s != FK_OK)
    FK_FAIL(s, "op '", name, "' (", active_origin(name, backend), ") failed with ", status_name(s), ": ",
            last_error_message());
  if (backend == DeviceType::cuda) {
    const std::string left = rt::take_pending_error();
    if (!left.empty())
      FK_FAIL(FK_ERR_CUDA, "op '", name, "' (", active_origin(name, backend),
              ") returned success but left a CUDA error: ", left);
  }
}

}  // namespace fk
