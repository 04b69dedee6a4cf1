// The gated delta rule ops' shared definition parts (gated_delta_case.h).
#include "ops/ssm/gated_delta_case.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <random>

#include "fk/element.h"
#include "fk/ops/gated_delta.h"
#include "fk/runtime.h"
#include "ops/common/case_builder.h"

namespace fk::ops {
namespace {

using A = GatedDeltaRuleArgs;

std::vector<int64_t> seq_lens_of(const Json& w, const char* op) {
  if (w.contains("seq_lens")) return wl_int_list(w, "seq_lens");
  const int64_t batch = wl_int(w, "batch"), len = wl_int(w, "seq_len");
  FK_CHECK(batch >= 0 && len >= 0, op, " workload needs batch >= 0 and seq_len >= 0, got ", w.dump());
  return std::vector<int64_t>(static_cast<size_t>(batch), len);
}

Tensor i32_tensor(const std::vector<int64_t>& values) {
  Tensor t = Tensor::empty({static_cast<int64_t>(values.size())}, DType::i32);
  for (size_t i = 0; i < values.size(); ++i) t.data_as<int32_t>()[i] = static_cast<int32_t>(values[i]);
  return t;
}

// The args of a case (any backend): sizes from the shapes only.
struct Sizes {
  double tokens, seqs, hk, hv, dk, dv, es, beta_es;
};
Sizes sizes_of(const A& a) {
  return {static_cast<double>(a.q.shape[0]),    static_cast<double>(a.cu_seqlens.shape[0] - 1),
          static_cast<double>(a.q.shape[1]),    static_cast<double>(a.v.shape[1]),
          static_cast<double>(a.q.shape[2]),    static_cast<double>(a.v.shape[2]),
          static_cast<double>(a.q.element_size()), static_cast<double>(a.beta.element_size())};
}
double gated_delta_bytes(const Sizes& s) {
  return s.tokens * (2 * s.hk * s.dk + 2 * s.hv * s.dv) * s.es + s.tokens * s.hv * (4 + s.beta_es) +
         2 * s.seqs * s.hv * s.dk * s.dv * 4 + 8 * s.seqs + 4;
}

}  // namespace

std::vector<TensorArg> gated_delta_tensor_args() {
  return {{"o", ArgRole::out, offsetof(A, o)},
          {"state", ArgRole::inout, offsetof(A, state), RowStride::any},
          {"q", ArgRole::in, offsetof(A, q), RowStride::any},
          {"k", ArgRole::in, offsetof(A, k), RowStride::any},
          {"v", ArgRole::in, offsetof(A, v), RowStride::any},
          {"g", ArgRole::in, offsetof(A, g)},
          {"beta", ArgRole::in, offsetof(A, beta)},
          {"cu_seqlens", ArgRole::in, offsetof(A, cu_seqlens)},
          {"state_indices", ArgRole::in, offsetof(A, state_indices)},
          {"has_initial_state", ArgRole::in, offsetof(A, has_initial_state)}};
}

OpCase make_gated_delta_case(const char* op, const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const std::vector<int64_t> lens = seq_lens_of(w, op);
  const int64_t hk = wl_int(w, "hk", 2), hv = wl_int(w, "hv", 4), dk = wl_int(w, "dk", 16), dv = wl_int(w, "dv", 8);
  FK_CHECK(hk >= 1 && hv >= 1 && dk >= 1 && dv >= 1 && hv % hk == 0, op,
           " workload needs hk, hv, dk, dv >= 1 with hv a multiple of hk, got ", w.dump());
  const DType dt = wl_dtype(w), beta_dt = wl_dtype(w, "beta_dtype", dt);
  const double g_min = wl_float(w, "g_min", -0.2), g_max = wl_float(w, "g_max", 0.0);
  const double b_min = wl_float(w, "beta_min", 0.0), b_max = wl_float(w, "beta_max", 1.0);
  FK_CHECK(g_min <= g_max && b_min <= b_max, op, " workload needs g_min <= g_max and beta_min <= beta_max, got ",
           w.dump());
  const std::string initial = wl_string(w, "initial", "slot");
  FK_CHECK(initial == "slot" || initial == "zeros" || initial == "mixed", op,
           " workload field initial must be slot, zeros or mixed, got ", w.dump());
  const bool l2norm = wl_bool(w, "l2norm", true);
  const int64_t spare = wl_int(w, "spare_slots", 2);
  FK_CHECK(spare >= 0, op, " workload needs spare_slots >= 0, got ", w.dump());

  const auto n = static_cast<int64_t>(lens.size());
  std::vector<int64_t> cu(1, 0);
  for (int64_t l : lens) {
    FK_CHECK(l >= 0, op, " workload has a negative sequence length: ", w.dump());
    cu.push_back(cu.back() + l);
  }
  const int64_t tokens = cu.back(), slots = n + spare;
  std::vector<int64_t> perm(static_cast<size_t>(slots));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937_64(seed ^ 0x5107u));
  perm.resize(static_cast<size_t>(n));

  OpCase c = begin_case<A>(w, layout.size());
  // Without the in-kernel norm, |q|^2 and |k|^2 are about 1 (uniform with variance 1/dk).
  const float qk = l2norm ? 1.f : static_cast<float>(std::sqrt(3.0 / static_cast<double>(dk)));
  c.tensors[0] = Tensor::empty({tokens, hv, dv}, dt);
  c.tensors[1] = random_tensor({slots, hv, dk, dv}, DType::f32, seed, 1, -1.f, 1.f);
  c.tensors[2] = random_tensor({tokens, hk, dk}, dt, seed, 2, -qk, qk);
  c.tensors[3] = random_tensor({tokens, hk, dk}, dt, seed, 3, -qk, qk);
  c.tensors[4] = random_tensor({tokens, hv, dv}, dt, seed, 4, -1.f, 1.f);
  c.tensors[5] = g_min == g_max ? Tensor::empty({tokens, hv}, DType::f32)
                                : random_tensor({tokens, hv}, DType::f32, seed, 5, static_cast<float>(g_min),
                                                static_cast<float>(g_max));
  if (g_min == g_max)
    for (int64_t i = 0; i < tokens * hv; ++i) c.tensors[5].data_as<float>()[i] = static_cast<float>(g_min);
  c.tensors[6] = b_min == b_max ? Tensor::empty({tokens, hv}, beta_dt)
                                : random_tensor({tokens, hv}, beta_dt, seed, 6, static_cast<float>(b_min),
                                                static_cast<float>(b_max));
  if (b_min == b_max)
    for (int64_t i = 0; i < tokens * hv; ++i) store_element(c.tensors[6].view().element_ptr(i), beta_dt, b_min);
  c.tensors[7] = i32_tensor(cu);
  c.tensors[8] = i32_tensor(perm);
  if (initial == "slot") {
    c.tensors[9] = absent_tensor(DType::i32);
  } else {
    std::vector<int64_t> flags(static_cast<size_t>(n), 0);
    if (initial == "mixed")
      for (size_t i = 0; i < flags.size(); i += 2) flags[i] = 1;
    c.tensors[9] = i32_tensor(flags);
  }
  c.bind(layout);
  A& a = c.as<A>();
  a.scale = static_cast<float>(wl_float(w, "scale", 0.0));
  a.use_qk_l2norm_in_kernel = l2norm ? 1 : 0;
  return c;
}

OpCost gated_delta_chunk_cost(const OpCase& c) {
  const Sizes s = sizes_of(c.as<A>());
  const double C = static_cast<double>(kGatedDeltaChunk);
  // Per token and value head: k k^T, q k^T and w = T (beta k) (C x K each), u = T (beta v) and
  // P v_new (C x V each), w S, q S and the state update k^T v_new (K x V each); two flops a MAC.
  const double flops = s.tokens * s.hv * 2 * (3 * C * s.dk + 2 * C * s.dv + 3 * s.dk * s.dv);
  return OpCost{gated_delta_bytes(s), flops, DType::bf16};
}

OpCost gated_delta_recurrent_cost(const OpCase& c) {
  const Sizes s = sizes_of(c.as<A>());
  // Per token and value head: the decay (one multiply) and three multiply-add passes over the
  // state (S^T k, the rank-one update, S^T q).
  return OpCost{gated_delta_bytes(s), s.tokens * s.hv * 7 * s.dk * s.dv, DType::f32};
}

Tolerance gated_delta_tolerance(const OpCase& c, const TensorArg& arg, DType dt) {
  const Tolerance base = default_tolerance(dt);
  // The CUDA baselines' f32 arithmetic stays within about 1e-6 of the f64 oracle on the test
  // workloads (values of order one); o adds a little to the dtype's own tolerance.
  if (arg.name == "o") return {base.atol + 2e-4, base.rtol};
  // The f32 state. With f32 inputs: a few hundred f32 ulp. With 16-bit inputs, a candidate
  // may take its chunk products on bf16/f16 tensor cores, as flash-linear-attention does:
  // u, w and v_new rounded to 16 bits (unit roundoff 2^-9 in bf16) feed the state through
  // sums of 64 random-signed terms a chunk, a relative error of a few 1e-3; half the bf16
  // tolerance admits that and still catches any wrong term (a leaked or lost state is O(1)).
  if (c.as<A>().q.dtype == DType::f32) return {std::max(base.atol, 2e-4), std::max(base.rtol, 1e-3)};
  return {5e-3, 8e-3};
}

Json gated_delta_workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  const int64_t n1 = a.cu_seqlens.shape[0];
  std::vector<int32_t> cu(static_cast<size_t>(n1));
  rt::memcpy_sync(cu.data(), Device::cpu(), a.cu_seqlens.data, a.cu_seqlens.device, cu.size() * sizeof(int32_t));
  std::vector<int64_t> lens;
  for (int64_t i = 0; i + 1 < n1; ++i) lens.push_back(cu[static_cast<size_t>(i + 1)] - cu[static_cast<size_t>(i)]);
  Json w = {{"seq_lens", lens},        {"hk", a.q.shape[1]},   {"hv", a.v.shape[1]},
            {"dk", a.q.shape[2]},      {"dv", a.v.shape[2]},   {"dtype", std::string(dtype_name(a.q.dtype))},
            {"l2norm", a.use_qk_l2norm_in_kernel != 0}};
  if (a.beta.dtype != a.q.dtype) w["beta_dtype"] = std::string(dtype_name(a.beta.dtype));
  if (a.scale > 0) w["scale"] = a.scale;
  w["spare_slots"] = a.state.shape[0] - (n1 - 1);
  if (a.has_initial_state.data != nullptr && a.has_initial_state.numel() > 0) {
    std::vector<int32_t> flags(static_cast<size_t>(a.has_initial_state.numel()));
    rt::memcpy_sync(flags.data(), Device::cpu(), a.has_initial_state.data, a.has_initial_state.device,
                    flags.size() * sizeof(int32_t));
    w["initial"] = std::all_of(flags.begin(), flags.end(), [](int32_t f) { return f == 0; }) ? "zeros" : "mixed";
  }
  // Decode-shaped calls read as batch x seq_len.
  if (!lens.empty() && std::all_of(lens.begin(), lens.end(), [&](int64_t l) { return l == lens[0]; }) &&
      lens.size() > 1) {
    w.erase("seq_lens");
    w["batch"] = static_cast<int64_t>(lens.size());
    w["seq_len"] = lens[0];
  }
  return w;
}

std::vector<Json> gated_delta_test_workloads() {
  return {
      // Chunk boundaries (1, 63, 64, 65, 200 tokens) packed in one call, grouped heads.
      {{"seq_lens", {1, 63, 64, 65, 200}}},
      {{"seq_lens", {65, 1, 200}}, {"dk", 32}, {"dv", 32}, {"dtype", "f32"}, {"beta_dtype", "f32"}},
      {{"seq_lens", {130}}, {"hk", 1}, {"hv", 3}, {"dk", 8}, {"dv", 12}, {"initial", "zeros"}},
      // Sequences without tokens (their slots still written), from zeros and from slots.
      {{"seq_lens", {0, 0, 5, 70, 0}}, {"initial", "mixed"}},
      // A strong decay (the state forgets within a token), no decay, beta 0 (nothing written),
      // beta 1 (the key's old value overwritten).
      {{"seq_lens", {100, 3}}, {"g_min", -30.0}, {"g_max", -20.0}},
      {{"seq_lens", {129}}, {"g_min", 0.0}, {"g_max", 0.0}},
      {{"seq_lens", {64, 64}}, {"beta_min", 0.0}, {"beta_max", 0.0}},
      {{"seq_lens", {96, 31}}, {"beta_min", 1.0}, {"beta_max", 1.0}, {"g_min", -0.02}},
      // q and k used as given, a scale of its own, f16 with an f32 beta.
      {{"seq_lens", {70, 9}}, {"l2norm", false}, {"scale", 0.3}},
      {{"seq_lens", {66, 2}}, {"dtype", "f16"}, {"beta_dtype", "f32"}, {"hk", 2}, {"hv", 2}},
      // Production head sizes (K = V = 128, 2 value heads a key head).
      {{"seq_lens", {130, 1}}, {"hk", 1}, {"hv", 2}, {"dk", 128}, {"dv", 128}},
      // Decode: one token per sequence, and several (speculative decoding's verification).
      {{"batch", 7}, {"seq_len", 1}},
      {{"batch", 3}, {"seq_len", 4}, {"initial", "mixed"}},
      {{"batch", 0}, {"seq_len", 1}},
  };
}

}  // namespace fk::ops
