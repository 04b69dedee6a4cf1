// The op registry: every op's definition (what the harness and tests need to instantiate,
// check and time it) and its implementations per backend. The registry's default entry
// for a backend is the engine's own implementation (the baseline); installing a
// candidate replaces it by name, and the engine follows without any other change.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fk/op.h"
#include "fk/tensor.h"

namespace fk {

using Json = nlohmann::json;

enum class ArgRole : uint8_t {
  in,         // read only; must be unchanged after the call
  out,        // written completely; poisoned before each checked call
  inout,      // read and updated in place
  workspace,  // scratch the caller allocates; contents undefined before and after
};
std::string_view role_name(ArgRole r);
// What a call writes: an out or inout argument.
inline bool is_written(ArgRole r) { return r == ArgRole::out || r == ArgRole::inout; }

// Whether a tensor argument accepts rows (dim 0) further apart than packed: a row-strided
// view such as a slice of a wider buffer (q/k/v of a packed qkv, the first rows of a
// persistent buffer). The dims after the first stay packed. What every implementation of
// the op must accept (its validation's promise, on every backend); the op tests check
// each declared argument with padded rows (harness/check/op_check_strided.h).
enum class RowStride : uint8_t {
  packed,     // contiguous only
  aligned16,  // any row stride whose rows start 16-byte aligned (data and stride in bytes)
  any,        // any row stride >= the packed row, any element-aligned start
};

struct TensorArg {
  std::string name;
  ArgRole role = ArgRole::in;
  size_t offset = 0;  // offsetof(Args, field)
  // Lives on the CPU whatever the backend (host mirrors of metadata that a plan step
  // reads, host staging buffers): case_to_device leaves it where it is.
  bool host_only = false;
  RowStride row_stride = RowStride::packed;

  TensorArg() = default;
  // {"k_cache", ArgRole::in, offsetof(Args, k_cache)}, {..., /*host_only=*/true}
  TensorArg(std::string name_, ArgRole role_, size_t offset_, bool host_only_ = false)
      : name(std::move(name_)), role(role_), offset(offset_), host_only(host_only_) {}
  // {"input", ArgRole::in, offsetof(Args, input), RowStride::any}
  TensorArg(std::string name_, ArgRole role_, size_t offset_, RowStride row_stride_)
      : name(std::move(name_)), role(role_), offset(offset_), row_stride(row_stride_) {}
};

// Element-wise tolerance against the double-precision oracle: |x - ref| <= atol + rtol*|ref|.
struct Tolerance {
  double atol = 0;
  double rtol = 0;
};
// Default per output dtype: about two units in the last place of the dtype.
Tolerance default_tolerance(DType t);

// The least work an op must do: speed of light is max(bytes / bandwidth, flops / rate).
struct OpCost {
  double bytes = 0;   // minimal device-memory traffic (each input read once, output written once)
  double flops = 0;   // useful floating-point operations
  DType math_dtype = DType::bf16;  // which measured compute ceiling applies
};

// One instantiated call: the tensors (parallel to OpDef::tensor_args) and the argument
// struct's bytes. bind() writes the tensors' views into the struct.
struct OpCase {
  Json workload;
  std::vector<Tensor> tensors;
  std::vector<std::byte> args;
  void bind(const std::vector<TensorArg>& layout);
  const void* args_ptr() const { return args.data(); }
  template <class A>
  A& as() { return *reinterpret_cast<A*>(args.data()); }
  template <class A>
  const A& as() const { return *reinterpret_cast<const A*>(args.data()); }
};

struct OpDef {
  std::string name;       // "rms_norm"
  std::string family;     // "norm" (the folder under src/ops/)
  std::string level = "L1";
  std::string summary;    // one line of semantics
  size_t args_size = 0;
  std::vector<TensorArg> tensor_args;

  // Instantiates a call on the host from a workload (shape, dtype and attribute fields):
  // inputs drawn from Philox(seed), outputs allocated. Throws fk::Error naming the field
  // for a workload it cannot make.
  std::function<OpCase(const Json& workload, uint64_t seed)> make_case;
  std::function<OpCost(const OpCase&)> cost;
  // Tolerance for one output (default: default_tolerance of its dtype).
  std::function<Tolerance(const OpCase&, const TensorArg&, DType)> tolerance;
  // Optional custom output check, for ops whose outputs are not compared element-wise
  // within a tolerance (sampling: a token is right if it is one the oracle could draw).
  // Gets the host case, the oracle case (after the reference ran) and the tested case's
  // tensors copied to the host; returns "" when the outputs are right, else why not.
  std::function<std::string(const OpCase& host, const OpCase& oracle, const OpCase& actual)> check_outputs;
  // Workloads for tests (edge and random shapes; small enough for the CPU oracle) and for
  // benchmarks (production shapes).
  std::vector<Json> test_workloads;
  std::vector<Json> bench_workloads;

  // A fused (L2) or layer (L3) op: the smaller ops it computes in one. When a candidate
  // replaces any of them, the registry calls `composed` instead of the fused baseline, so
  // the candidate still runs (see OpRegistry::call).
  std::vector<std::string> covers;
  // The fused op's computation as calls of the covered ops through the registry, per
  // backend (cpu, cuda); required when `covers` is not empty.
  fk_op_fn composed[2] = {nullptr, nullptr};
  // The registered architectures whose runs call this op ("llama", "qwen3_moe", ...):
  // what `fk ops list --json` and the tasks report.
  std::vector<std::string> architectures;
  // Rebuilds a task workload (the fields make_case reads) from the args of a captured
  // engine call; null when the op cannot be captured. Used by `fk capture`.
  std::function<Json(const void* args)> workload_from_call;
};

// A kernel variant: a named alternative path of an op's baseline, for A/B comparison.
// Selected per op (`--variant op=name`, several joined by '+'; FK_VARIANTS for processes
// without a command line); none selected is the default path.
struct OpVariantInfo {
  std::string op;
  std::string name;
  std::string summary;
};

class OpRegistry {
 public:
  static OpRegistry& global();

  void define(OpDef def);
  bool has(std::string_view name) const;
  const OpDef& def(std::string_view name) const;  // throws naming the op if unknown
  std::vector<const OpDef*> defs() const;        // sorted by name

  // The engine's own implementation for a backend.
  void set_baseline(std::string_view name, DeviceType backend, fk_op_fn fn);
  // Replaces the active implementation (the baseline stays available).
  void install(std::string_view name, DeviceType backend, fk_op_fn fn, std::string origin);
  void reset(std::string_view name, DeviceType backend);  // back to the baseline
  // Optional plan step (host-side scheduling, e.g. attention work partitioning): called
  // with the same args before a series of calls whose metadata does not change; it may
  // write the args' workspace tensors. Not timed by op benchmarks. A candidate that
  // replaces run may bring its own plan (installed together) or keep none; the judge gives
  // a candidate's plan the host_only and workspace tensors only, every other tensor's data
  // pointing at a guard address that faults when read (harness/judge/plan_guard.h).
  void set_baseline_plan(std::string_view name, DeviceType backend, fk_op_fn plan);
  void install_plan(std::string_view name, DeviceType backend, fk_op_fn plan);  // null = none
  fk_op_fn active_plan(std::string_view name, DeviceType backend) const;  // null if none
  // Runs the active plan, if any (a failing status becomes fk::Error naming the op).
  void plan(std::string_view name, DeviceType backend, const void* args, void* stream) const;
  fk_op_fn active(std::string_view name, DeviceType backend) const;    // null if none
  fk_op_fn baseline(std::string_view name, DeviceType backend) const;  // null if none
  std::string active_origin(std::string_view name, DeviceType backend) const;

  // Calls the active implementation; a failing status becomes fk::Error naming the op.
  void call(std::string_view name, DeviceType backend, const void* args, void* stream) const;

  // Workload capture (fk capture): when set, every call is timed (the stream synchronised
  // before and after, so device work is counted — never set it while a CUDA graph is being
  // captured) and reported to the observer. Null clears it.
  using CallObserver = std::function<void(const OpDef& def, DeviceType backend, const void* args, double seconds)>;
  void set_call_observer(CallObserver observer);
  // Inside the observer: how many observed calls enclose the one just reported on this
  // thread (0 for a call the engine made; 1 for a part a layer op called, and so on). The
  // observer is told of a call after it returns, so an op's parts are reported before it.
  static int observed_call_depth();

  // Kernel variants. define_variant registers one (from the op's files); select_variants
  // sets the op's active set (empty: the default path) and throws fk::Error naming an
  // unknown op or variant; variant_on is what a baseline asks on its launch path.
  void define_variant(std::string_view op, std::string name, std::string summary);
  void select_variants(std::string_view op, const std::vector<std::string>& names);
  bool variant_on(std::string_view op, std::string_view name) const;
  std::vector<OpVariantInfo> variants() const;  // sorted by op, then name
  // The non-default selections as "op=a+b,op2=c" (sorted; "" when every op runs its
  // default): recorded with every result.
  std::string active_variants() const;
  // Parses "op=a+b,op2=c" and selects each (the format of --variant and FK_VARIANTS).
  void select_variants_from_string(std::string_view spec);
  // Bumped on every selection change, so a launch path may cache variant_on answers.
  uint64_t variant_epoch() const;

  // The op's high-precision GPU reference (CUDA builds): what the harness checks against
  // when a workload is too large for the CPU oracle. It computes the CPU reference's
  // outputs on the GPU with double-precision arithmetic, from device inputs into f64
  // output tensors (integer outputs keep their dtype), exactly like the oracle case of
  // harness/check/op_check.h. It is not an implementation slot: install() and reset() never touch
  // it, and it can be registered once per op (a second registration is an error).
  // It may allocate, copy and synchronise; it reads the inputs and writes only the outputs.
  void set_gpu_reference(std::string_view name, fk_op_fn fn);
  fk_op_fn gpu_reference(std::string_view name) const;  // null if none

 private:
  struct Impls {
    fk_op_fn baseline[2] = {nullptr, nullptr};
    fk_op_fn active[2] = {nullptr, nullptr};
    std::string origin[2] = {"baseline", "baseline"};
    fk_op_fn baseline_plan[2] = {nullptr, nullptr};
    fk_op_fn active_plan[2] = {nullptr, nullptr};
  };
  void call_unobserved(std::string_view name, DeviceType backend, const void* args, void* stream) const;
  mutable std::mutex mu_;
  CallObserver observer_;
  std::map<std::string, OpDef, std::less<>> defs_;
  std::map<std::string, Impls, std::less<>> impls_;
  std::map<std::string, fk_op_fn, std::less<>> gpu_references_;
  std::map<std::string, std::map<std::string, std::string, std::less<>>, std::less<>> variant_defs_;  // op -> name -> summary
  std::map<std::string, std::vector<std::string>, std::less<>> variant_selection_;  // op -> active names
  std::atomic<uint64_t> variant_epoch_{0};
};

// FK_REGISTER_VARIANT("linear", "no_autotune", "cuBLASLt's first algorithm, untimed")
struct OpVariantRegistrar {
  OpVariantRegistrar(const char* op, const char* name, const char* summary) {
    OpRegistry::global().define_variant(op, name, summary);
  }
};

// Static registration from each op family's files.
struct OpDefRegistrar {
  explicit OpDefRegistrar(OpDef (*make)()) { OpRegistry::global().define(make()); }
};
struct OpImplRegistrar {
  OpImplRegistrar(const char* name, DeviceType backend, fk_op_fn fn) {
    OpRegistry::global().set_baseline(name, backend, fn);
  }
};

struct OpPlanRegistrar {
  OpPlanRegistrar(const char* name, DeviceType backend, fk_op_fn fn) {
    OpRegistry::global().set_baseline_plan(name, backend, fn);
  }
};

struct OpGpuReferenceRegistrar {
  OpGpuReferenceRegistrar(const char* name, fk_op_fn fn) { OpRegistry::global().set_gpu_reference(name, fn); }
};

// Typed call through the registry: call_op(args, backend, stream) with Args::kName.
template <class Args>
void call_op(const Args& args, DeviceType backend, void* stream) {
  OpRegistry::global().call(Args::kName, backend, &args, stream);
}

}  // namespace fk

#define FK_CONCAT_INNER(a, b) a##b
#define FK_CONCAT(a, b) FK_CONCAT_INNER(a, b)
// FK_REGISTER_OP(make_fn): make_fn() returns the OpDef.
#define FK_REGISTER_OP(MAKE) static ::fk::OpDefRegistrar FK_CONCAT(fk_opdef_, __COUNTER__)(MAKE)
// FK_REGISTER_IMPL("rms_norm", cpu, fn)
#define FK_REGISTER_IMPL(NAME, BACKEND, FN) \
  static ::fk::OpImplRegistrar FK_CONCAT(fk_opimpl_, __COUNTER__)(NAME, ::fk::DeviceType::BACKEND, FN)
// FK_REGISTER_PLAN("batch_decode_attention", cuda, fn)
#define FK_REGISTER_PLAN(NAME, BACKEND, FN) \
  static ::fk::OpPlanRegistrar FK_CONCAT(fk_opplan_, __COUNTER__)(NAME, ::fk::DeviceType::BACKEND, FN)
// FK_REGISTER_VARIANT("linear", "no_autotune", "one line of what the path does differently")
#define FK_REGISTER_VARIANT(OP, NAME, SUMMARY) \
  static ::fk::OpVariantRegistrar FK_CONCAT(fk_opvariant_, __COUNTER__)(OP, NAME, SUMMARY)
// FK_REGISTER_GPU_REFERENCE("linear", fn): from a CUDA-only file (*.cu or *_cuda.cpp).
#define FK_REGISTER_GPU_REFERENCE(NAME, FN) \
  static ::fk::OpGpuReferenceRegistrar FK_CONCAT(fk_opgpuref_, __COUNTER__)(NAME, FN)
