// rms_norm_linear: definition (workloads, inputs, cost, tolerance) and CPU reference, which
// is the composition of the norm and linear references (so the engine's CPU backend gives
// the same bits as running fused_add_rms_norm and linear one after the other).
#include <algorithm>
#include <cmath>

#include "fk/element.h"
#include "fk/ops/linear.h"
#include "ops/common/case_builder.h"
#include "ops/common/layer_cost.h"
#include "ops/linear/linear_reference.h"
#include "ops/linear/linear_tolerance.h"
#include "ops/linear/rms_norm_linear_composed.h"
#include "ops/linear/rms_norm_linear_validate.h"
#include "ops/norm/norm_reference.h"

namespace fk::ops {
namespace {

constexpr const char* kOp = RmsNormLinearArgs::kName;

void rms_norm_linear_reference(const RmsNormLinearArgs& a) {
  const int64_t M = a.input.shape[0], K = a.input.shape[1];
  const DType model = a.input.dtype;
  const bool has_residual = arg_present(a.residual_in);
  if (has_residual)  // out of place: residual_out starts as residual_in, then takes the add
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) set(a.residual_out, get(a.residual_in, m, k), m, k);
  rms_norm_reference(a.normed, a.input, has_residual ? &a.residual_out : nullptr, a.norm_weight, a.eps,
                     NormScale::weight);
  // The GEMM consumes the normalised rows in the model dtype (as every implementation
  // does); in the oracle `normed` is f64, so round it there too.
  if (a.normed.dtype != model)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) set(a.normed, round_to_dtype(get(a.normed, m, k), model), m, k);
  linear_reference(LinearArgs{a.out, a.normed, a.weight, a.bias, TensorView{}, TensorView{}});
}

fk_status rms_norm_linear_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const RmsNormLinearArgs*>(args);
    validate_rms_norm_linear(a, DeviceType::cpu);
    if (a.input.shape[0] == 0) return;
    rms_norm_linear_reference(a);
  });
}

// `out`: linear's accumulation term (see linear_tolerance.h) over rows whose rms is about
// rms(norm_weight), plus a few normalised elements that an fp32 implementation rounds to
// the neighbouring value of the dtype (its 1/rms differs from the oracle's in the last
// bits), each moving an output by about ulp * |w|. Other outputs: the dtype's default.
Tolerance rms_norm_linear_tolerance(const OpCase& c, const TensorArg& arg, DType dt) {
  Tolerance tol = default_tolerance(dt);
  if (arg.name != "out") return tol;
  const auto& a = c.as<RmsNormLinearArgs>();
  const double K = static_cast<double>(a.input.shape[1]);
  const double row_rms = tensor_rms(a.norm_weight), w_rms = tensor_rms(a.weight);
  const double ulp = half_rounding_unit(a.input.dtype);
  tol.atol += 4 * std::ldexp(1.0, -24) * std::sqrt(K) * std::sqrt(K) * row_rms * w_rms + 16 * ulp * row_rms * w_rms;
  return tol;
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const RmsNormLinearArgs*>(args);
  Json w = {{"m", a.input.shape[0]},
            {"n", a.weight.shape[0]},
            {"k", a.weight.shape[1]},
            {"dtype", std::string(dtype_name(a.input.dtype))},
            // A [M, K] residual (even with no rows) against the absent one's empty vector.
            {"residual", a.residual_in.rank == 2},
            {"eps", a.eps}};
  if (arg_present(a.bias)) w["bias"] = true;
  return w;
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "linear";
  d.level = "L2";
  d.summary = "residual_out = input + residual_in; normed = rms_norm(that) * norm_weight; out = normed @ weight^T "
              "(+ bias), fused";
  d.args_size = sizeof(RmsNormLinearArgs);
  d.tensor_args = {{"out", ArgRole::out, offsetof(RmsNormLinearArgs, out), RowStride::aligned16},
                   {"normed", ArgRole::out, offsetof(RmsNormLinearArgs, normed), RowStride::aligned16},
                   {"residual_out", ArgRole::out, offsetof(RmsNormLinearArgs, residual_out), RowStride::aligned16},
                   {"input", ArgRole::in, offsetof(RmsNormLinearArgs, input), RowStride::aligned16},
                   {"residual_in", ArgRole::in, offsetof(RmsNormLinearArgs, residual_in), RowStride::aligned16},
                   {"norm_weight", ArgRole::in, offsetof(RmsNormLinearArgs, norm_weight)},
                   {"weight", ArgRole::in, offsetof(RmsNormLinearArgs, weight), RowStride::aligned16},
                   {"bias", ArgRole::in, offsetof(RmsNormLinearArgs, bias)}};
  // Workload fields: m, n, k; dtype (bf16 | f16, default bf16); bias (bool); residual (bool,
  // default true: the fused residual add); eps (default 1e-6).
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const int64_t M = wl_int(w, "m"), N = wl_int(w, "n"), K = wl_int(w, "k");
    FK_CHECK(M >= 0 && N >= 0 && K > 0, "rms_norm_linear workload needs m >= 0, n >= 0, k > 0, got ", w.dump());
    const DType dt = wl_dtype(w);
    FK_CHECK(dt == DType::bf16 || dt == DType::f16, "rms_norm_linear workload dtype must be bf16 or f16, got ",
             w.dump());
    const bool residual = wl_bool(w, "residual", true);
    OpCase c = begin_case<RmsNormLinearArgs>(w, 8);
    c.tensors[0] = Tensor::empty({M, N}, dt);
    c.tensors[1] = Tensor::empty({M, K}, dt);
    c.tensors[2] = residual ? Tensor::empty({M, K}, dt) : absent_tensor(dt);
    c.tensors[3] = random_tensor({M, K}, dt, seed, 1, -2.f, 2.f);
    c.tensors[4] = residual ? random_tensor({M, K}, dt, seed, 2, -4.f, 4.f) : absent_tensor(dt);
    c.tensors[5] = random_tensor({K}, dt, seed, 3, 0.5f, 1.5f);
    c.tensors[6] = random_tensor({N, K}, dt, seed, 4, -1.f, 1.f);
    c.tensors[7] = wl_bool(w, "bias", false) ? random_tensor({N}, dt, seed, 5, -1.f, 1.f) : absent_tensor(dt);
    c.as<RmsNormLinearArgs>().eps = static_cast<float>(wl_float(w, "eps", 1e-6));
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<RmsNormLinearArgs>();
    const double M = static_cast<double>(a.input.shape[0]), K = static_cast<double>(a.input.shape[1]);
    const double N = static_cast<double>(a.weight.shape[0]);
    double bytes = 0;
    for (const TensorView* v : {&a.out, &a.normed, &a.residual_out, &a.input, &a.residual_in, &a.norm_weight,
                                &a.weight, &a.bias})
      if (arg_present(*v)) bytes += static_cast<double>(v->nbytes());
    return OpCost{bytes, 2.0 * M * N * K + 5.0 * M * K, a.input.dtype};
  };
  d.tolerance = rms_norm_linear_tolerance;

  using J = Json;
  d.test_workloads = {
      J{{"m", 1}, {"n", 64}, {"k", 64}},
      J{{"m", 1}, {"n", 48}, {"k", 256}, {"residual", false}},  // the first layer: norm of the embedding only
      J{{"m", 3}, {"n", 100}, {"k", 72}, {"bias", true}},       // N, K not multiples of 16
      J{{"m", 2}, {"n", 37}, {"k", 1288}, {"dtype", "f16"}},    // K tail shorter than a warp's sweep
      J{{"m", 4}, {"n", 40}, {"k", 4096}, {"bias", true}},
      J{{"m", 4}, {"n", 9}, {"k", 8192}, {"residual", false}},
      J{{"m", 1}, {"n", 3}, {"k", 32768}},  // the longest fused row (64 KB of shared memory)
      J{{"m", 1}, {"n", 1}, {"k", 2048}},                       // one output feature
      J{{"m", 1}, {"n", 2000}, {"k", 128}, {"bias", true}},     // many CTAs, one writer of normed
      J{{"m", 2}, {"n", 24}, {"k", 33}},                        // odd K: the unfused path
      J{{"m", 5}, {"n", 130}, {"k", 520}, {"dtype", "f16"}, {"bias", true}},  // tensor-core decode GEMM
      J{{"m", 17}, {"n", 96}, {"k", 128}, {"residual", false}},               // cuBLASLt
      J{{"m", 40}, {"n", 64}, {"k", 256}, {"bias", true}, {"eps", 1e-5}},
      J{{"m", 0}, {"n", 64}, {"k", 64}},  // no tokens
  };
  // Llama-3.1-8B's two norm sites (qkv after the input norm, gate_up after the post-attention
  // norm) and Qwen3-30B-A3B's (qkv, and the router) at decode batches 1 and 4, and a
  // prefill chunk.
  const int64_t site_nk[4][2] = {{6144, 4096}, {28672, 4096}, {5120, 2048}, {128, 2048}};
  for (int64_t m : {1, 4})
    for (const auto& nk : site_nk) d.bench_workloads.push_back(J{{"m", m}, {"n", nk[0]}, {"k", nk[1]}});
  d.bench_workloads.push_back(J{{"m", 4096}, {"n", 6144}, {"k", 4096}});
  d.workload_from_call = workload_from_call;
  // Its parts: with a candidate for any of them (or the variant "unfused"), the registry
  // runs rms_norm_linear_composed instead (OpRegistry::call).
  d.covers = {"rms_norm", "fused_add_rms_norm", "linear"};
  d.composed[static_cast<int>(DeviceType::cpu)] = rms_norm_linear_composed<DeviceType::cpu>;
  d.composed[static_cast<int>(DeviceType::cuda)] = rms_norm_linear_composed<DeviceType::cuda>;
  // Plain RMSNorm without sandwich norms: each sub-layer's norm and the linear after it.
  d.architectures = {"llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen3_moe", "qwen2_moe", "olmoe"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("rms_norm_linear", cpu, rms_norm_linear_cpu);

}  // namespace
}  // namespace fk::ops
