// pairformer_transition: definition (workloads, case, cost, tolerance), validation, the
// composed baseline (its parts through the registry) and the CPU reference in double (the
// oracle, when x is f64), in the order of fk/ops/pairformer.h.
#include <cmath>
#include <vector>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/activation.h"
#include "fk/ops/elementwise.h"
#include "fk/ops/norm.h"
#include "fk/ops/pairformer.h"
#include "ops/common/case_builder.h"
#include "ops/common/validate.h"
#include "ops/pairformer/pairformer_transition_composed.h"
#include "ops/pairformer/triangle_multiplication_view.h"

namespace fk::ops {
namespace {

using A = TransitionArgs;
constexpr const char* kOp = A::kName;

struct Dims {
  int64_t rows, channels, hidden;  // T, C, F
};

Dims validate(const A& a, DeviceType backend) {
  FK_CHECK(a.x.rank == 2, kOp, ": x must be [T, C], got ", describe(a.x));
  const DType dt = a.w.in_weight.dtype;
  FK_CHECK(dt == DType::f32 || dt == DType::f16 || dt == DType::bf16, kOp,
           ": the weights must be f32, f16 or bf16, got in_weight ", describe(a.w.in_weight));
  expect_written_dtype(kOp, "x", a.x, dt, backend);
  expect_contiguous(kOp, "x", a.x);
  const int64_t T = a.x.shape[0], C = a.x.shape[1];
  FK_CHECK(C > 0, kOp, ": x must have at least one channel, got ", describe(a.x));
  FK_CHECK(a.w.in_weight.rank == 2 && a.w.in_weight.shape[1] == C && a.w.in_weight.shape[0] > 0 &&
               a.w.in_weight.shape[0] % 2 == 0,
           kOp, ": in_weight must be [2 F, ", C, "] (the u rows, then the w rows), got ", describe(a.w.in_weight));
  const int64_t F = a.w.in_weight.shape[0] / 2;
  FK_CHECK(a.w.out_weight.rank == 2 && a.w.out_weight.shape[0] == C && a.w.out_weight.shape[1] == F, kOp,
           ": out_weight must be [", C, ", ", F, "] (F from in_weight's ", 2 * F, " rows), got ",
           describe(a.w.out_weight));
  expect_packed_shape(kOp, "in_weight", a.w.in_weight, {2 * F, C}, dt);
  expect_packed_shape(kOp, "out_weight", a.w.out_weight, {C, F}, dt);
  expect_packed_shape(kOp, "ln_weight", a.w.ln_weight, {C}, dt);
  expect_packed_shape(kOp, "ln_bias", a.w.ln_bias, {C}, dt);
  expect_packed_shape(kOp, "normed", a.normed, {T, C}, dt);
  expect_packed_shape(kOp, "hidden", a.hidden, {T, 2 * F}, dt);
  expect_packed_shape(kOp, "act", a.act, {T, F}, dt);
  expect_packed_shape(kOp, "update", a.update, {T, C}, dt);
  return Dims{T, C, F};
}

double rounded(DType t, double x) {
  alignas(8) unsigned char buf[8] = {};
  store_element(buf, t, x);
  return load_element(buf, t);
}
double at(const TensorView& v, int64_t i) { return load_element(v.element_ptr(i), v.dtype); }

// The oracle: x is f64. normed, hidden, act and update are rounded to the dtype where the
// composed baseline stores them; the math between is double.
void reference(const A& a) {
  const Dims d = validate(a, DeviceType::cpu);
  const DType dt = a.w.in_weight.dtype;
  const int64_t C = d.channels, F = d.hidden;
  std::vector<double> n(C), h(2 * F), act(F);
  for (int64_t t = 0; t < d.rows; ++t) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) mean += at(a.x, t * C + c);
    mean /= static_cast<double>(C);
    for (int64_t c = 0; c < C; ++c) var += (at(a.x, t * C + c) - mean) * (at(a.x, t * C + c) - mean);
    const double rstd = 1 / std::sqrt(var / static_cast<double>(C) + 1e-5);
    for (int64_t c = 0; c < C; ++c)
      n[c] = rounded(dt, (at(a.x, t * C + c) - mean) * rstd * at(a.w.ln_weight, c) + at(a.w.ln_bias, c));
    for (int64_t o = 0; o < 2 * F; ++o) {
      double acc = 0;
      for (int64_t c = 0; c < C; ++c) acc += n[c] * at(a.w.in_weight, o * C + c);
      h[o] = rounded(dt, acc);
    }
    for (int64_t f = 0; f < F; ++f) act[f] = rounded(dt, h[f] / (1 + std::exp(-h[f])) * h[F + f]);
    for (int64_t c = 0; c < C; ++c) {
      double acc = 0;
      for (int64_t f = 0; f < F; ++f) acc += act[f] * at(a.w.out_weight, c * F + f);
      store_element(a.x.element_ptr(t * C + c), a.x.dtype, at(a.x, t * C + c) + rounded(dt, acc));
    }
  }
}

fk_status pairformer_transition_cpu(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    if (a.x.dtype == DType::f64) reference(a);
    else pairformer_transition_composed(a, DeviceType::cpu, nt_gemm_cpu, stream);
  });
}

// The baselines are already their parts called through the registry (a candidate for a
// covered op runs inside them), so the composed forms are the baselines: the CPU one here,
// the CUDA one as registered by the CUDA build.
fk_status composed_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const fk_op_fn cuda = OpRegistry::global().baseline(kOp, DeviceType::cuda);
    FK_CHECK(cuda != nullptr, kOp, ": no CUDA baseline in this build");
    const fk_status s = cuda(args, stream);
    if (s != FK_OK) FK_FAIL(s, last_error_message());
  });
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  return Json{{"rows", a.x.shape[0]},
              {"channels", a.x.shape[1]},
              {"hidden", a.w.out_weight.shape[1]},
              {"dtype", std::string(dtype_name(a.w.in_weight.dtype))}};
}

// Workload fields: rows (T), channels (C), hidden (F) required; dtype [bf16].
OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const int64_t T = wl_int(w, "rows"), C = wl_int(w, "channels"), F = wl_int(w, "hidden");
  FK_CHECK(T >= 0 && C > 0 && F > 0, kOp, " workload needs rows >= 0, channels and hidden positive; got ", w.dump());
  const DType dt = w.contains("dtype") ? wl_dtype(w) : DType::bf16;
  OpCase c = begin_case<A>(w, 9);
  c.tensors[0] = random_tensor({T, C}, dt, seed, 1, -2.f, 2.f);
  c.tensors[1] = random_tensor({C}, dt, seed, 2, 0.5f, 1.5f);
  c.tensors[2] = random_tensor({C}, dt, seed, 3, -0.2f, 0.2f);
  const float r_in = static_cast<float>(std::sqrt(3.0 / static_cast<double>(C)));
  const float r_out = static_cast<float>(std::sqrt(3.0 / static_cast<double>(F)));
  c.tensors[3] = random_tensor({2 * F, C}, dt, seed, 4, -r_in, r_in);
  c.tensors[4] = random_tensor({C, F}, dt, seed, 5, -r_out, r_out);
  c.tensors[5] = Tensor::empty({T, C}, dt);
  c.tensors[6] = Tensor::empty({T, 2 * F}, dt);
  c.tensors[7] = Tensor::empty({T, F}, dt);
  c.tensors[8] = Tensor::empty({T, C}, dt);
  c.bind(layout);
  return c;
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "pairformer";
  d.level = "L2";
  d.summary = "AlphaFold3's SwiGLU transition (Algorithm 11), in place on the pair or single representation's "
              "rows: layer norm, [u | w] projection, silu(u) * w, output projection, residual add";
  d.args_size = sizeof(A);
  d.tensor_args = {
      {"x", ArgRole::inout, offsetof(A, x)},
      {"ln_weight", ArgRole::in, offsetof(A, w.ln_weight)},
      {"ln_bias", ArgRole::in, offsetof(A, w.ln_bias)},
      {"in_weight", ArgRole::in, offsetof(A, w.in_weight)},
      {"out_weight", ArgRole::in, offsetof(A, w.out_weight)},
      {"normed", ArgRole::workspace, offsetof(A, normed)},
      {"hidden", ArgRole::workspace, offsetof(A, hidden)},
      {"act", ArgRole::workspace, offsetof(A, act)},
      {"update", ArgRole::workspace, offsetof(A, update)},
  };
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double T = static_cast<double>(a.x.shape[0]), C = static_cast<double>(a.x.shape[1]),
                 F = static_cast<double>(a.w.out_weight.shape[1]), es = static_cast<double>(a.x.element_size());
    return OpCost{(3 * F * C + 2 * C) * es + 2 * T * C * es, 2 * T * 3 * F * C, a.w.in_weight.dtype};
  };
  // x + update is not normalised: a one-unit difference in a rounded intermediate (fp32
  // layer norm and GEMMs against the oracle's double) passes through the projections.
  d.tolerance = [](const OpCase& c, const TensorArg&, DType) {
    const Tolerance t = default_tolerance(c.as<A>().w.in_weight.dtype);
    return Tolerance{4 * t.atol, 4 * t.rtol};
  };
  d.workload_from_call = workload_from_call;
  d.composed[0] = pairformer_transition_cpu;
  d.composed[1] = composed_cuda;
  d.covers = {"layer_norm", "linear", "silu_and_mul", "add"};
  d.architectures = {"openfold3"};
  d.test_workloads = {
      {{"rows", 1}, {"channels", 16}, {"hidden", 64}},
      {{"rows", 37}, {"channels", 32}, {"hidden", 128}},
      {{"rows", 0}, {"channels", 32}, {"hidden", 128}},
      {{"rows", 50}, {"channels", 24}, {"hidden", 96}, {"dtype", "f16"}},
      {{"rows", 19}, {"channels", 40}, {"hidden", 160}, {"dtype", "f32"}},
  };
  // OpenFold3: the pair transition over N x N rows (Cz = 128, F = 512) at N = 384 and 768,
  // and the single transition over N rows (Cs = 384, F = 1536).
  for (int64_t n : {384, 768}) d.bench_workloads.push_back({{"rows", n * n}, {"channels", 128}, {"hidden", 512}});
  for (int64_t n : {384, 768}) d.bench_workloads.push_back({{"rows", n}, {"channels", 384}, {"hidden", 1536}});
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("pairformer_transition", cpu, pairformer_transition_cpu);

}  // namespace

void pairformer_transition_composed(const TransitionArgs& a, DeviceType backend, NtGemmFn gemm, void* stream) {
  const Dims d = validate(a, backend);
  if (d.rows == 0) return;
  call_op(LayerNormArgs{a.normed, a.x, a.w.ln_weight, a.w.ln_bias, 1e-5f}, backend, stream);
  pairformer_project(a.hidden, a.normed, a.w.in_weight, backend, gemm, stream);
  // silu_and_mul reads [gate | up]: the transition's [u | w].
  call_op(SiluAndMulArgs{a.act, a.hidden}, backend, stream);
  pairformer_project(a.update, a.act, a.w.out_weight, backend, gemm, stream);
  call_op(AddArgs{a.x, a.x, a.update}, backend, stream);
}

}  // namespace fk::ops
