#include "fk/op_registry.h"

#include "fk/runtime.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

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

// Observed calls in progress on this thread (see OpRegistry::observed_call_depth).
static thread_local int observed_depth = 0;

// The name of the variant that makes a fused op run its composed form (FK_REGISTER_VARIANT
// from the op's folder): the registry reads it here, so no op repeats the choice.
constexpr std::string_view kUnfusedVariant = "unfused";

void OpRegistry::call(std::string_view name, DeviceType backend, const void* args, void* stream) const {
  if (op_trace_enabled()) trace_call(def(name), backend, args);
  // A fused op (one that `covers` smaller ops) runs its composed form, the covered ops
  // called through the registry, when one of them has a candidate installed on this
  // backend (so that candidate runs wherever the engine uses the fused op) or when the
  // op's "unfused" variant is selected; a candidate installed for the fused op itself
  // always runs. Then only the covered ops' calls reach the observer: they are what ran.
  const int b = static_cast<int>(backend);
  fk_op_fn composed = nullptr;
  std::string composed_because;
  variant_epoch();  // applies FK_VARIANTS before the selection is read below
  {
    std::lock_guard lk(mu_);
    auto d = defs_.find(name);
    if (d != defs_.end() && !d->second.covers.empty()) {
      auto own = impls_.find(name);
      const bool own_candidate = own != impls_.end() && own->second.active[b] != own->second.baseline[b];
      if (!own_candidate) {
        if (auto v = variant_selection_.find(name); v != variant_selection_.end() &&
            std::find(v->second.begin(), v->second.end(), kUnfusedVariant) != v->second.end())
          composed_because = "its unfused variant is selected";
        for (const std::string& part : d->second.covers) {
          if (!composed_because.empty()) break;
          auto p = impls_.find(part);
          if (p != impls_.end() && p->second.active[b] != p->second.baseline[b])
            composed_because = concat(part, " has a candidate (", p->second.origin[b], ")");
        }
        composed = d->second.composed[b];
        if (!composed_because.empty() && composed == nullptr)
          FK_FAIL(FK_ERR_UNSUPPORTED, "op '", name, "' must run as its parts (", composed_because, ") but has no ",
                  backend == DeviceType::cpu ? "cpu" : "cuda", " composed form");
      }
    }
  }
  if (!composed_because.empty()) {
    const fk_status s = composed(args, stream);
    if (s != FK_OK)
      FK_FAIL(s, "op '", name, "' as its parts (", composed_because, ") failed with ", status_name(s), ": ",
              last_error_message());
    return;
  }
  if (!observer_) return call_unobserved(name, backend, args, stream);
  const bool cuda = backend == DeviceType::cuda;  // CPU ops are synchronous
  if (cuda) rt::stream_synchronize(stream);
  const auto t0 = std::chrono::steady_clock::now();
  {
    struct Depth {  // the calls an op makes through the registry (a layer's parts) are nested in it
      Depth() { ++observed_depth; }
      ~Depth() { --observed_depth; }
    } depth;
    call_unobserved(name, backend, args, stream);
  }
  if (cuda) rt::stream_synchronize(stream);
  observer_(def(name), backend, args, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

int OpRegistry::observed_call_depth() { return observed_depth; }

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

namespace {

// FK_VARIANTS is applied to the global registry on the first use of the variant API rather
// than at static initialisation, so that every FK_REGISTER_VARIANT has run whatever the
// order of the translation units. A selection made later (--variant) overrides it.
std::mutex env_variants_mu;
std::atomic<bool> env_variants_applied{false};
thread_local bool applying_env_variants = false;

void apply_env_variants(OpRegistry& r) {
  if (env_variants_applied.load(std::memory_order_acquire) || applying_env_variants) return;
  if (&r != &OpRegistry::global()) return;
  std::lock_guard lk(env_variants_mu);
  if (env_variants_applied.load(std::memory_order_relaxed)) return;
  applying_env_variants = true;
  try {
    if (const char* spec = std::getenv("FK_VARIANTS"); spec != nullptr && *spec != '\0')
      r.select_variants_from_string(spec);
  } catch (const Error& e) {
    applying_env_variants = false;
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "FK_VARIANTS: ", e.what());  // not marked applied: every use fails alike
  }
  applying_env_variants = false;
  env_variants_applied.store(true, std::memory_order_release);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_on(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t end = s.find(sep, start);
    parts.push_back(trim(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start)));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

using VariantDefs = std::map<std::string, std::map<std::string, std::string, std::less<>>, std::less<>>;

// Throws naming an unknown op or variant, with what could have been meant.
void check_variant_names(const VariantDefs& defs, bool op_defined, std::string_view op,
                         const std::vector<std::string>& names) {
  auto it = defs.find(op);
  if (it == defs.end()) {
    std::string with_variants;
    for (const auto& [o, v] : defs) with_variants += (with_variants.empty() ? "" : ", ") + o;
    if (op_defined)
      FK_FAIL(FK_ERR_INVALID_ARGUMENT, "op '", op, "' has no variants (ops with variants: ", with_variants, ")");
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "unknown op '", op, "' in a variant selection (ops with variants: ",
            with_variants, ")");
  }
  for (const std::string& n : names) {
    if (it->second.contains(n)) continue;
    std::string known;
    for (const auto& [v, summary] : it->second) known += (known.empty() ? "" : ", ") + v;
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "op '", op, "' has no variant '", n, "' (its variants: ", known, ")");
  }
}

}  // namespace

void OpRegistry::define_variant(std::string_view op, std::string name, std::string summary) {
  std::lock_guard lk(mu_);
  FK_CHECK(!op.empty() && !name.empty(), "a variant needs an op and a name (op '", op, "', name '", name, "')");
  FK_CHECK(name.find_first_of("=+, ") == std::string::npos, "variant name '", name, "' of op ", op,
           " may not contain '=', '+', ',' or spaces");
  auto& names = variant_defs_[std::string(op)];
  FK_CHECK(!names.contains(name), "variant ", name, " of op ", op, " defined twice");
  names.emplace(std::move(name), std::move(summary));
}

void OpRegistry::select_variants(std::string_view op, const std::vector<std::string>& names) {
  apply_env_variants(*this);
  std::lock_guard lk(mu_);
  check_variant_names(variant_defs_, defs_.find(op) != defs_.end(), op, names);
  std::vector<std::string> chosen;
  for (const std::string& n : names)
    if (std::find(chosen.begin(), chosen.end(), n) == chosen.end()) chosen.push_back(n);
  std::sort(chosen.begin(), chosen.end());
  if (chosen.empty())
    variant_selection_.erase(std::string(op));
  else
    variant_selection_[std::string(op)] = std::move(chosen);
  variant_epoch_.fetch_add(1, std::memory_order_acq_rel);
}

bool OpRegistry::variant_on(std::string_view op, std::string_view name) const {
  apply_env_variants(const_cast<OpRegistry&>(*this));
  std::lock_guard lk(mu_);
  auto d = variant_defs_.find(op);
  // A launch path asking for a variant nobody registered is a typo that would silently
  // keep the default path.
  FK_CHECK(d != variant_defs_.end() && d->second.contains(name), "op '", op, "' has no variant '", name,
           "' registered");
  auto it = variant_selection_.find(op);
  return it != variant_selection_.end() && std::find(it->second.begin(), it->second.end(), name) != it->second.end();
}

std::vector<OpVariantInfo> OpRegistry::variants() const {
  std::lock_guard lk(mu_);
  std::vector<OpVariantInfo> out;
  for (const auto& [op, names] : variant_defs_)
    for (const auto& [name, summary] : names) out.push_back({op, name, summary});
  return out;
}

std::string OpRegistry::active_variants() const {
  apply_env_variants(const_cast<OpRegistry&>(*this));
  std::lock_guard lk(mu_);
  std::string out;
  for (const auto& [op, names] : variant_selection_) {
    if (names.empty()) continue;
    out += concat(out.empty() ? "" : ",", op, "=");
    for (size_t i = 0; i < names.size(); ++i) out += concat(i ? "+" : "", names[i]);
  }
  return out;
}

void OpRegistry::select_variants_from_string(std::string_view spec) {
  // Parsed whole before anything is selected, so that a bad entry selects nothing.
  std::vector<std::pair<std::string, std::vector<std::string>>> selections;
  for (std::string_view entry : split_on(spec, ',')) {
    if (entry.empty()) continue;
    const size_t eq = entry.find('=');
    FK_CHECK(eq != std::string_view::npos, "variant selection '", entry, "' is not op=name (several names: op=a+b)");
    const std::string_view op = trim(entry.substr(0, eq));
    FK_CHECK(!op.empty(), "variant selection '", entry, "' names no op");
    std::vector<std::string> names;
    for (std::string_view n : split_on(entry.substr(eq + 1), '+'))
      if (!n.empty()) names.emplace_back(n);
    selections.emplace_back(std::string(op), std::move(names));
  }
  {
    std::lock_guard lk(mu_);
    for (const auto& [op, names] : selections)
      check_variant_names(variant_defs_, defs_.find(op) != defs_.end(), op, names);
  }
  for (const auto& [op, names] : selections) select_variants(op, names);
}

uint64_t OpRegistry::variant_epoch() const {
  apply_env_variants(const_cast<OpRegistry&>(*this));
  return variant_epoch_.load(std::memory_order_acquire);
}

}  // namespace fk
