// gdn_layer: definition (workloads, case, cost, tolerance, capture), validation, the
// composed baseline (its parts through the registry) and the CPU oracle, in the order of
// fk/ops/gdn_layer.h.
//
// Workload fields: seq_lens (tokens per sequence; prefill) or batch (sequences of one
// token each; decode), hidden, hk, hv, dk, dv (required), width [4], dtype [bf16],
// decode [false], initial (prefill: which sequences continue from their slots: "mixed"
// [default], "zeros" or "slot" for no flags), spare_slots [2], eps [1e-6].
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/gated_delta.h"
#include "fk/ops/gdn_layer.h"
#include "fk/ops/linear.h"
#include "fk/ops/norm.h"
#include "fk/ops/ssm_conv.h"
#include "fk/ops/ssm_gating.h"
#include "ops/common/case_builder.h"
#include "ops/common/layer_cost.h"
#include "ops/common/packed_validate.h"
#include "ops/common/validate.h"
#include "ops/common/views.h"
#include "ops/ssm/causal_conv1d_case.h"
#include "ops/ssm/gdn_layer_composed.h"

namespace fk::ops {
namespace {

using A = GdnLayerArgs;
constexpr const char* kOp = A::kName;

struct Dims {
  int64_t tokens, seqs, hidden, hk, hv, dk, dv, width;
  int64_t key_dim() const { return hk * dk; }
  int64_t value_dim() const { return hv * dv; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }
};

// The sizes come from the weights (H, Hv, V, W, Dc) and the delta state (K); the parts
// check the rest of their own arguments (layouts, strides, the slot pools) when called.
Dims validate(const A& a, DeviceType backend) {
  FK_CHECK(a.hidden.rank == 2, kOp, ": hidden must be [tokens, hidden], got ", describe(a.hidden));
  const DType dt = a.hidden.dtype;
  FK_CHECK(dt == DType::bf16 || dt == DType::f16, kOp, ": hidden must be bf16 or f16, got ", describe(a.hidden));
  expect_contiguous(kOp, "hidden", a.hidden);
  Dims d{};
  d.tokens = a.hidden.shape[0], d.hidden = a.hidden.shape[1];
  FK_CHECK(a.a_log.rank == 1 && a.a_log.shape[0] >= 1, kOp, ": a_log must be [value heads], got ", describe(a.a_log));
  d.hv = a.a_log.shape[0];
  FK_CHECK(a.norm_weight.rank == 1 && a.norm_weight.shape[0] >= 1, kOp,
           ": norm_weight must be [value head size], got ", describe(a.norm_weight));
  d.dv = a.norm_weight.shape[0];
  FK_CHECK(a.ssm_state.rank == 4 && a.ssm_state.shape[1] == d.hv && a.ssm_state.shape[3] == d.dv, kOp,
           ": ssm_state must be [slots, ", d.hv, ", K, ", d.dv, "] (value heads of a_log, head size of norm_weight), got ",
           describe(a.ssm_state));
  d.dk = a.ssm_state.shape[2];
  FK_CHECK(a.conv_weight.rank == 2, kOp, ": conv_weight must be [conv channels, width], got ", describe(a.conv_weight));
  d.width = a.conv_weight.shape[1];
  const int64_t keys2 = a.conv_weight.shape[0] - d.value_dim();
  FK_CHECK(d.dk >= 1 && keys2 > 0 && keys2 % (2 * d.dk) == 0, kOp, ": conv_weight's ", a.conv_weight.shape[0],
           " channels must be q and k heads of ", d.dk, " (ssm_state's K) and the ", d.value_dim(),
           " value channels, got ", describe(a.conv_weight));
  d.hk = keys2 / (2 * d.dk);
  FK_CHECK(d.hv % d.hk == 0, kOp, ": the value heads (", d.hv, ") must be a multiple of the key heads (", d.hk, ")");

  expect_packed_matrix(kOp, "in_proj", a.in_proj, d.conv_dim() + 2 * d.hv, d.hidden, dt);
  expect_packed_matrix(kOp, "z_proj", a.z_proj, d.value_dim(), d.hidden, dt);
  expect_packed_matrix(kOp, "out_proj", a.out_proj, d.hidden, d.value_dim(), dt);
  expect_packed_matrix(kOp, "conv_weight", a.conv_weight, d.conv_dim(), d.width, dt);
  expect_packed_vector(kOp, "a_log", a.a_log, d.hv, DType::f32);
  expect_packed_vector(kOp, "dt_bias", a.dt_bias, d.hv, DType::f32);
  expect_packed_vector(kOp, "norm_weight", a.norm_weight, d.dv, dt);
  FK_CHECK(a.out.rank == 2 && a.out.shape[0] == d.tokens && a.out.shape[1] == d.hidden, kOp, ": out must be [",
           d.tokens, ", ", d.hidden, "] (like hidden), got ", describe(a.out));
  expect_written_dtype(kOp, "out", a.out, dt, backend);
  expect_contiguous(kOp, "out", a.out);

  FK_CHECK(a.cu_seqlens.rank == 1 && a.cu_seqlens.shape[0] >= 1, kOp, ": cu_seqlens must be [N + 1], got ",
           describe(a.cu_seqlens));
  d.seqs = a.cu_seqlens.shape[0] - 1;
  const bool flags = arg_present(a.has_initial_state), bool_flags = arg_present(a.has_initial_state_bool);
  FK_CHECK(flags == bool_flags, kOp, ": has_initial_state and has_initial_state_bool come together (the delta ",
           "rule reads the first, the convolution the second), got ", describe(a.has_initial_state), " and ",
           describe(a.has_initial_state_bool));
  FK_CHECK(a.decode == 0 || a.decode == 1, kOp, ": decode must be 0 or 1, got ", a.decode);
  FK_CHECK(a.decode == 0 || d.tokens == d.seqs, kOp, ": decode takes one token per sequence, got ", d.tokens,
           " tokens for ", d.seqs, " sequences");
  if (flags && backend == DeviceType::cpu) {
    for (int64_t n = 0; n < d.seqs; ++n)
      FK_CHECK((get_index(a.has_initial_state, n) != 0) == (get_index(a.has_initial_state_bool, n) != 0), kOp,
               ": has_initial_state and has_initial_state_bool disagree for sequence ", n);
  }

  const auto scratch = [&](const char* name, const TensorView& v, int64_t cols, DType t) {
    expect_packed_matrix(kOp, name, v, d.tokens, cols, t);
  };
  scratch("proj", a.proj, d.conv_dim() + 2 * d.hv, dt);
  scratch("z", a.z, d.value_dim(), dt);
  scratch("mixed", a.mixed, d.conv_dim(), dt);
  scratch("g", a.g, d.hv, DType::f32);
  scratch("beta", a.beta, d.hv, dt);
  scratch("core", a.core, d.value_dim(), dt);
  scratch("core_normed", a.core_normed, d.value_dim(), dt);
  FK_CHECK(a.eps > 0, kOp, ": eps must be positive, got ", a.eps);
  return d;
}

// The parts in the engine's order, each through `call` (the registry for the composed
// baselines; the CPU baselines for the oracle).
template <class Call>
void run_parts(const A& a, const Dims& d, Call&& call) {
  using views::columns, views::heads, views::head_rows;
  const TensorView none{};
  call(LinearArgs{a.proj, a.hidden, a.in_proj, none, none, none});
  call(LinearArgs{a.z, a.hidden, a.z_proj, none, none, none});
  const TensorView conv_in = columns(a.proj, 0, d.conv_dim());
  if (a.decode != 0)
    call(CausalConv1dUpdateArgs{a.mixed, conv_in, a.conv_weight, none, a.conv_state, a.state_indices, 1});
  else
    call(CausalConv1dArgs{a.mixed, conv_in, a.conv_weight, none, a.conv_state, a.cu_seqlens, a.state_indices,
                          a.has_initial_state_bool, 1});
  call(GdnGatingArgs{a.g, a.beta, columns(a.proj, d.conv_dim() + d.hv, d.hv), columns(a.proj, d.conv_dim(), d.hv),
                     a.a_log, a.dt_bias});
  GatedDeltaRuleArgs rule{heads(a.core, d.hv, d.dv),
                          a.ssm_state,
                          heads(columns(a.mixed, 0, d.key_dim()), d.hk, d.dk),
                          heads(columns(a.mixed, d.key_dim(), d.key_dim()), d.hk, d.dk),
                          heads(columns(a.mixed, 2 * d.key_dim(), d.value_dim()), d.hv, d.dv),
                          a.g,
                          a.beta,
                          a.cu_seqlens,
                          a.state_indices,
                          a.decode != 0 ? none : a.has_initial_state,
                          0.0f,
                          1};
  if (a.decode != 0) {
    FusedRecurrentGatedDeltaRuleArgs r{};
    static_cast<GatedDeltaRuleArgs&>(r) = rule;
    call(r);
  } else {
    ChunkGatedDeltaRuleArgs r{};
    static_cast<GatedDeltaRuleArgs&>(r) = rule;
    call(r);
  }
  call(RmsNormGatedArgs{head_rows(a.core_normed, d.hv, d.dv), head_rows(a.core, d.hv, d.dv),
                        head_rows(a.z, d.hv, d.dv), a.norm_weight, a.eps, NormGateActivation::silu});
  call(LinearArgs{a.out, a.core_normed, a.out_proj, none, none, none});
}

template <DeviceType B>
fk_status composed(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    const Dims d = validate(a, B);
    run_parts(a, d, [&](const auto& part) { call_op(part, B, stream); });
  });
}

// The oracle: out (and the two states) in f64. The parts run as their CPU baselines, each
// computing in double: every scratch matrix between them holds the dtype, as each part
// reads its inputs in the dtype; the delta state stays f64 from call to call and the last
// GEMM is not rounded. Never through the registry: a candidate for a part must not become
// the oracle.
void reference(const A& a) {
  const Dims d = validate(a, DeviceType::cpu);
  run_parts(a, d, [](const auto& part) {
    using Part = std::decay_t<decltype(part)>;
    const fk_op_fn fn = OpRegistry::global().baseline(Part::kName, DeviceType::cpu);
    FK_CHECK(fn != nullptr, kOp, ": no CPU baseline of ", Part::kName);
    const fk_status s = fn(&part, nullptr);
    if (s != FK_OK) FK_FAIL(s, kOp, ": its part ", Part::kName, " failed: ", last_error_message());
  });
}

fk_status gdn_layer_cpu(const void* args, void* stream) {
  const auto& a = *static_cast<const A*>(args);
  if (a.out.dtype != DType::f64) return gdn_layer_composed_cpu(args, stream);
  return op_guard([&] { reference(a); });
}

// The workload of a captured call (the capture synchronises around each call, so the
// device metadata can be read here).
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  const std::vector<int64_t> cu = conv_case::read_ints(a.cu_seqlens);
  std::vector<int64_t> lens;
  for (size_t n = 0; n + 1 < cu.size(); ++n) lens.push_back(cu[n + 1] - cu[n]);
  const int64_t hv = a.a_log.shape[0], dv = a.norm_weight.shape[0], dk = a.ssm_state.shape[2];
  const int64_t hk = (a.conv_weight.shape[0] - hv * dv) / (2 * dk);
  Json w{{"hidden", a.hidden.shape[1]}, {"hk", hk}, {"hv", hv}, {"dk", dk}, {"dv", dv},
         {"width", a.conv_weight.shape[1]}, {"dtype", std::string(dtype_name(a.hidden.dtype))},
         {"eps", a.eps}, {"spare_slots", std::max<int64_t>(0, a.ssm_state.shape[0] - static_cast<int64_t>(lens.size()))}};
  if (a.decode != 0) {
    w["decode"] = true;
    w["batch"] = static_cast<int64_t>(lens.size());
    return w;
  }
  w["seq_lens"] = lens;
  if (!arg_present(a.has_initial_state)) {
    w["initial"] = "slot";
  } else {
    const std::vector<int64_t> flags = conv_case::read_ints(a.has_initial_state);
    w["initial"] = std::all_of(flags.begin(), flags.end(), [](int64_t f) { return f == 0; }) ? "zeros" : "mixed";
  }
  return w;
}

Tensor i32_tensor(const std::vector<int64_t>& values, DType dt = DType::i32) {
  Tensor t = Tensor::empty({static_cast<int64_t>(values.size())}, dt);
  for (size_t i = 0; i < values.size(); ++i) store_element(t.view().element_ptr(static_cast<int64_t>(i)), dt,
                                                           static_cast<double>(values[i]));
  return t;
}

OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const bool decode = wl_bool(w, "decode", false);
  std::vector<int64_t> lens;
  if (decode) {
    FK_CHECK(!w.contains("seq_lens"), kOp, " workload: a decode workload gives batch (one token a sequence), not "
             "seq_lens; got ", w.dump());
    lens.assign(static_cast<size_t>(std::max<int64_t>(0, wl_int(w, "batch"))), 1);
  } else {
    lens = wl_int_list(w, "seq_lens");
  }
  const int64_t H = wl_int(w, "hidden"), hk = wl_int(w, "hk"), hv = wl_int(w, "hv"), dk = wl_int(w, "dk"),
                dv = wl_int(w, "dv"), W = wl_int(w, "width", 4), spare = wl_int(w, "spare_slots", 2);
  FK_CHECK(H > 0 && hk > 0 && hv > 0 && dk > 0 && dv > 0 && hv % hk == 0 && W >= 2 && W <= 4 && spare >= 0, kOp,
           " workload needs hidden, hk, hv, dk, dv > 0 with hv a multiple of hk, width in [2, 4] and spare_slots >= 0; "
           "got ", w.dump());
  const std::string initial = wl_string(w, "initial", "mixed");
  FK_CHECK(initial == "mixed" || initial == "zeros" || initial == "slot", kOp,
           " workload field initial must be mixed, zeros or slot, got ", w.dump());
  const DType dt = w.contains("dtype") ? wl_dtype(w) : DType::bf16;
  const Dims d{0, static_cast<int64_t>(lens.size()), H, hk, hv, dk, dv, W};
  std::vector<int64_t> cu{0};
  for (int64_t l : lens) {
    FK_CHECK(l >= 0, kOp, " workload seq_lens must be >= 0, got ", w.dump());
    cu.push_back(cu.back() + l);
  }
  const int64_t T = cu.back(), N = d.seqs, S = N + spare;
  // Each sequence's slot: the first N of a seeded permutation of the pool's.
  std::vector<int64_t> slots(static_cast<size_t>(S));
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), std::mt19937_64(seed ^ 0x9d17u));
  slots.resize(static_cast<size_t>(N));

  OpCase c = begin_case<A>(w, layout.size());
  // Weights scaled by 1/sqrt(fan-in) (activations of order one through the layer); decay
  // rates A = exp(a_log) in [0.14, 2.7] and dt_bias around zero (g of order -1 a token).
  const auto weight = [&](int64_t rows, int64_t cols, uint64_t stream) {
    const float r = static_cast<float>(std::sqrt(3.0 / static_cast<double>(cols)));
    return random_tensor({rows, cols}, dt, seed, stream, -r, r);
  };
  c.tensors[0] = Tensor::empty({T, H}, dt);
  c.tensors[1] = random_tensor({T, H}, dt, seed, 1, -1.5f, 1.5f);
  c.tensors[2] = weight(d.conv_dim() + 2 * hv, H, 2);
  c.tensors[3] = weight(d.value_dim(), H, 3);
  c.tensors[4] = weight(d.conv_dim(), W, 4);
  c.tensors[5] = random_tensor({hv}, DType::f32, seed, 5, -2.f, 1.f);
  c.tensors[6] = random_tensor({hv}, DType::f32, seed, 6, -1.f, 1.f);
  c.tensors[7] = random_tensor({dv}, dt, seed, 7, 0.5f, 1.5f);
  c.tensors[8] = weight(H, d.value_dim(), 8);
  c.tensors[9] = random_tensor({S, d.conv_dim(), W - 1}, dt, seed, 9, -1.f, 1.f);
  c.tensors[10] = random_tensor({S, hv, dk, dv}, DType::f32, seed, 10, -0.5f, 0.5f);
  c.tensors[11] = i32_tensor(cu);
  c.tensors[12] = i32_tensor(slots);
  if (decode || initial == "slot") {
    c.tensors[13] = absent_tensor(DType::i32);
    c.tensors[14] = absent_tensor(DType::boolean);
  } else {
    std::vector<int64_t> flags(static_cast<size_t>(N), 0);
    if (initial == "mixed")
      for (size_t n = 0; n < flags.size(); n += 2) flags[n] = 1;
    c.tensors[13] = i32_tensor(flags);
    c.tensors[14] = i32_tensor(flags, DType::boolean);
  }
  c.tensors[15] = Tensor::empty({T, d.conv_dim() + 2 * hv}, dt);
  c.tensors[16] = Tensor::empty({T, d.value_dim()}, dt);
  c.tensors[17] = Tensor::empty({T, d.conv_dim()}, dt);
  c.tensors[18] = Tensor::empty({T, hv}, DType::f32);
  c.tensors[19] = Tensor::empty({T, hv}, dt);
  c.tensors[20] = Tensor::empty({T, d.value_dim()}, dt);
  c.tensors[21] = Tensor::empty({T, d.value_dim()}, dt);
  A& a = c.as<A>();
  a.eps = static_cast<float>(wl_float(w, "eps", 1e-6));
  a.decode = decode ? 1 : 0;
  c.bind(layout);
  return c;
}

// Bytes: the weights once, hidden read and out written, each sequence's two states read and
// written. Flops: the three projections, the convolution, and the delta rule as its path
// computes it (gated_delta_case.cpp's models: the chunked form's matrix products, the
// recurrence's passes over the state).
OpCost cost(const OpCase& c) {
  const auto& a = c.as<A>();
  const double T = static_cast<double>(a.hidden.shape[0]), H = static_cast<double>(a.hidden.shape[1]),
               N = static_cast<double>(a.cu_seqlens.shape[0] - 1), hv = static_cast<double>(a.a_log.shape[0]),
               dv = static_cast<double>(a.norm_weight.shape[0]), dk = static_cast<double>(a.ssm_state.shape[2]),
               Dc = static_cast<double>(a.conv_weight.shape[0]), W = static_cast<double>(a.conv_weight.shape[1]),
               es = static_cast<double>(a.hidden.element_size()), C = static_cast<double>(kGatedDeltaChunk);
  const double proj_rows = Dc + 2 * hv + hv * dv + H;  // in_proj, z_proj and out_proj rows of H (out_proj's transposed)
  const double weights = (proj_rows * H + Dc * W + dv) * es + 8 * hv;
  const double states = 2 * N * (Dc * (W - 1) * es + hv * dk * dv * 4);
  const double rule = a.decode != 0 ? T * hv * 7 * dk * dv : T * hv * 2 * (3 * C * dk + 2 * C * dv + 3 * dk * dv);
  const double flops = 2 * T * H * proj_rows + 2 * T * Dc * W + rule;
  return OpCost{weights + states + 2 * T * H * es, flops, a.hidden.dtype};
}

// out: the composed baselines round every scratch matrix to the dtype where the oracle's
// last GEMM does not, and a CUDA part's f32 sums may flip an intermediate's last bit; a
// candidate may also take the delta rule's chunk products in 16 bits (gated_delta_case.cpp).
// A few units of the dtype's rounding covers that; a wrong or missing part moves outputs of
// order one. The conv state holds copies of the projection (one unit); the delta state the
// delta rule's own tolerance.
Tolerance tolerance(const OpCase& c, const TensorArg& arg, DType) {
  const double u = half_rounding_unit(c.as<A>().hidden.dtype);
  if (arg.name == "ssm_state") return {5e-3, 8e-3};
  if (arg.name == "conv_state") return {u, u};
  return {4 * u, 4 * u};
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "ssm";
  d.level = "L3";
  d.summary = "Qwen3-Next's gated DeltaNet token mixer: in/z projections, short causal conv with SiLU, decay and "
              "write gates, the gated delta rule over per-sequence state slots (chunked prefill or recurrent "
              "decode), gated RMSNorm per value head and the output projection, over packed sequences";
  d.args_size = sizeof(A);
  d.tensor_args = {
      {"out", ArgRole::out, offsetof(A, out)},
      {"hidden", ArgRole::in, offsetof(A, hidden)},
      {"in_proj", ArgRole::in, offsetof(A, in_proj)},
      {"z_proj", ArgRole::in, offsetof(A, z_proj)},
      {"conv_weight", ArgRole::in, offsetof(A, conv_weight)},
      {"a_log", ArgRole::in, offsetof(A, a_log)},
      {"dt_bias", ArgRole::in, offsetof(A, dt_bias)},
      {"norm_weight", ArgRole::in, offsetof(A, norm_weight)},
      {"out_proj", ArgRole::in, offsetof(A, out_proj)},
      {"conv_state", ArgRole::inout, offsetof(A, conv_state)},
      {"ssm_state", ArgRole::inout, offsetof(A, ssm_state)},
      {"cu_seqlens", ArgRole::in, offsetof(A, cu_seqlens)},
      {"state_indices", ArgRole::in, offsetof(A, state_indices)},
      {"has_initial_state", ArgRole::in, offsetof(A, has_initial_state)},
      {"has_initial_state_bool", ArgRole::in, offsetof(A, has_initial_state_bool)},
      {"proj", ArgRole::workspace, offsetof(A, proj)},
      {"z", ArgRole::workspace, offsetof(A, z)},
      {"mixed", ArgRole::workspace, offsetof(A, mixed)},
      {"g", ArgRole::workspace, offsetof(A, g)},
      {"beta", ArgRole::workspace, offsetof(A, beta)},
      {"core", ArgRole::workspace, offsetof(A, core)},
      {"core_normed", ArgRole::workspace, offsetof(A, core_normed)},
  };
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = cost;
  d.tolerance = tolerance;
  d.workload_from_call = workload_from_call;
  d.covers = {"linear",         "causal_conv1d",          "causal_conv1d_update",
              "gdn_gating",     "chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule",
              "rms_norm_gated"};
  d.composed[0] = gdn_layer_composed_cpu;
  d.composed[1] = gdn_layer_composed_cuda;
  d.architectures = {"qwen3_next"};
  using J = Json;
  const J small{{"hidden", 64}, {"hk", 2}, {"hv", 4}, {"dk", 16}, {"dv", 16}};
  const auto with = [&](J base, const J& extra) {
    for (const auto& [k, v] : extra.items()) base[k] = v;
    return base;
  };
  // Chunk boundaries (63, 64, 65 tokens) packed with short sequences, from zeros and from
  // slots; sequences shorter than the conv's window (its state shifts along) and empty ones;
  // grouped value heads of a size of their own; decode of one and of several sequences, f16
  // and bf16, every conv width.
  d.test_workloads = {
      with(small, {{"seq_lens", {1, 63, 64, 65, 7}}}),
      with(small, {{"seq_lens", {3, 2, 1, 0}}, {"initial", "slot"}, {"dtype", "f16"}}),
      J{{"seq_lens", {130, 0, 5}}, {"hidden", 48}, {"hk", 1}, {"hv", 3}, {"dk", 8}, {"dv", 12}, {"width", 2},
        {"initial", "zeros"}, {"dtype", "f16"}},
      with(small, {{"decode", true}, {"batch", 7}}),
      with(small, {{"decode", true}, {"batch", 1}, {"width", 3}, {"dtype", "f16"}, {"spare_slots", 0}}),
  };
  // Qwen3-Next-80B-A3B (hidden 2048, 16 key heads and 32 value heads of 128, 4 taps): one
  // 4096-token prompt, eight of 512, and decode steps of 1, 64 and 256 sequences.
  const J qwen3_next{{"hidden", 2048}, {"hk", 16}, {"hv", 32}, {"dk", 128}, {"dv", 128}};
  d.bench_workloads = {
      with(qwen3_next, {{"seq_lens", {4096}}, {"initial", "zeros"}}),
      with(qwen3_next, {{"seq_lens", std::vector<int64_t>(8, 512)}, {"initial", "zeros"}}),
      with(qwen3_next, {{"decode", true}, {"batch", 1}}),
      with(qwen3_next, {{"decode", true}, {"batch", 64}}),
      with(qwen3_next, {{"decode", true}, {"batch", 256}}),
  };
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("gdn_layer", cpu, gdn_layer_cpu);

}  // namespace

fk_status gdn_layer_composed_cpu(const void* args, void* stream) { return composed<DeviceType::cpu>(args, stream); }
fk_status gdn_layer_composed_cuda(const void* args, void* stream) { return composed<DeviceType::cuda>(args, stream); }

}  // namespace fk::ops
