// pair_bias_attention (fk/ops/pairformer.h): the CPU reference in double (also the CPU
// implementation and the oracle) and the definition: workloads, case, cost.
//
// Workload fields: rows (R), seq (S), heads (Hh), head_dim (D) required; groups (G) [1],
// dtype [bf16], scale [1 / sqrt(D)], mask [none]: "none" (absent), "random" (each key kept
// with probability 3/4, every fourth row fully masked) or "padded" (each row keeps a
// random prefix of its keys, possibly none); masked [false]: true stands for "padded" where
// mask is not given (what a captured call records).
#include <cmath>
#include <string>
#include <vector>

#include "fk/element.h"
#include "ops/common/case_builder.h"
#include "ops/pairformer/pair_bias_attention_validate.h"

namespace fk::ops {
namespace {

using A = PairBiasAttentionArgs;
constexpr const char* kOp = A::kName;

// One (row, head): queries over keys with the group's bias, softmax in double.
void attend(const A& a, const PairBiasAttentionDims& d, int64_t r, int64_t h, std::vector<double>& k,
            std::vector<double>& v, std::vector<double>& p, std::vector<bool>& visible) {
  const int64_t S = d.seq, D = d.head_dim, g = r / (d.rows / d.groups);
  for (int64_t j = 0; j < S; ++j) {
    visible[static_cast<size_t>(j)] = !d.masked || get(a.mask, r, j) != 0.0;
    for (int64_t c = 0; c < D; ++c) {
      k[static_cast<size_t>(j * D + c)] = get(a.k, r, j, h, c);
      v[static_cast<size_t>(j * D + c)] = get(a.v, r, j, h, c);
    }
  }
  std::vector<double> q(static_cast<size_t>(D)), o(static_cast<size_t>(D));
  for (int64_t i = 0; i < S; ++i) {
    for (int64_t c = 0; c < D; ++c) q[static_cast<size_t>(c)] = get(a.q, r, i, h, c);
    double mx = -INFINITY;
    for (int64_t j = 0; j < S; ++j) {
      if (!visible[static_cast<size_t>(j)]) continue;
      double s = 0;
      for (int64_t c = 0; c < D; ++c) s += q[static_cast<size_t>(c)] * k[static_cast<size_t>(j * D + c)];
      s = s * static_cast<double>(a.scale) + get(a.bias, g, h, i, j);
      p[static_cast<size_t>(j)] = s;
      mx = std::max(mx, s);
    }
    std::fill(o.begin(), o.end(), 0.0);
    if (mx > -INFINITY) {  // else every key is masked: the query writes zeros
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) {
        if (!visible[static_cast<size_t>(j)]) continue;
        const double e = std::exp(p[static_cast<size_t>(j)] - mx);
        sum += e;
        for (int64_t c = 0; c < D; ++c) o[static_cast<size_t>(c)] += e * v[static_cast<size_t>(j * D + c)];
      }
      for (double& x : o) x /= sum;
    }
    for (int64_t c = 0; c < D; ++c) set(a.out, o[static_cast<size_t>(c)], r, i, h, c);
  }
}

fk_status pair_bias_attention_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    const PairBiasAttentionDims d = validate_pair_bias_attention(a, DeviceType::cpu);
    if (d.rows == 0 || d.seq == 0) return;
    const size_t kv = static_cast<size_t>(d.seq * d.head_dim);
    std::vector<double> k(kv), v(kv), p(static_cast<size_t>(d.seq));
    std::vector<bool> visible(static_cast<size_t>(d.seq));
    for (int64_t r = 0; r < d.rows; ++r)
      for (int64_t h = 0; h < d.heads; ++h) attend(a, d, r, h, k, v, p, visible);
  });
}

OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const int64_t R = wl_int(w, "rows"), S = wl_int(w, "seq"), H = wl_int(w, "heads"), D = wl_int(w, "head_dim");
  const int64_t G = wl_int(w, "groups", 1);
  FK_CHECK(R >= 0 && S >= 0 && H > 0 && D > 0 && G > 0 && R % G == 0, kOp,
           " workload needs rows >= 0, seq >= 0, heads > 0, head_dim > 0 and groups > 0 dividing rows; got ", w.dump());
  // A captured call names only whether it had a mask ("masked"): its values are data.
  const std::string mask = wl_string(w, "mask", wl_bool(w, "masked", false) ? "padded" : "none");
  FK_CHECK(mask == "none" || mask == "random" || mask == "padded", kOp,
           " workload: mask must be none, random or padded, got ", w.dump());
  const DType dt = wl_dtype(w);
  OpCase c = begin_case<A>(w, 6);
  c.tensors[0] = Tensor::empty({R, S, H, D}, dt);
  c.tensors[1] = random_tensor({R, S, H, D}, dt, seed, 1, -2.f, 2.f);
  c.tensors[2] = random_tensor({R, S, H, D}, dt, seed, 2, -2.f, 2.f);
  c.tensors[3] = random_tensor({R, S, H, D}, dt, seed, 3, -1.f, 1.f);
  c.tensors[4] = random_tensor({G, H, S, S}, dt, seed, 4, -2.f, 2.f);
  if (mask == "none") {
    c.tensors[5] = absent_tensor(dt);
  } else {
    const Tensor u = random_tensor({R, S + 1}, DType::f32, seed, 5, 0.f, 1.f);
    Tensor m = Tensor::zeros({R, S}, dt);
    for (int64_t r = 0; r < R; ++r) {
      const float* ur = u.data_as<float>() + r * (S + 1);
      const int64_t kept = static_cast<int64_t>(ur[S] * static_cast<float>(S + 1));  // padded: 0..S keys
      for (int64_t j = 0; j < S; ++j) {
        const bool keep = mask == "random" ? (r % 4 != 3 && ur[j] < 0.75f) : j < kept;
        if (keep) set(m.view(), 1.0, r, j);
      }
    }
    c.tensors[5] = m;
  }
  c.as<A>().scale = static_cast<float>(wl_float(w, "scale", 1.0 / std::sqrt(static_cast<double>(D))));
  c.bind(layout);
  return c;
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  return Json{{"rows", a.q.shape[0]},
              {"seq", a.q.shape[1]},
              {"heads", a.q.shape[2]},
              {"head_dim", a.q.shape[3]},
              {"groups", a.bias.shape[0]},
              {"masked", arg_present(a.mask)},
              {"scale", a.scale},
              {"dtype", std::string(dtype_name(a.q.dtype))}};
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "pairformer";
  d.level = "L1";
  d.summary = "multi-head attention with an additive [G, Hh, S, S] bias shared by groups of rows and an optional "
              "key mask (AlphaFold3's triangle attention and AttentionPairBias core)";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out)}, {"q", ArgRole::in, offsetof(A, q)},
                   {"k", ArgRole::in, offsetof(A, k)},      {"v", ArgRole::in, offsetof(A, v)},
                   {"bias", ArgRole::in, offsetof(A, bias)}, {"mask", ArgRole::in, offsetof(A, mask)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double es = static_cast<double>(a.q.element_size());
    const double qkvo = 4.0 * static_cast<double>(a.q.numel()) * es;
    const double R = static_cast<double>(a.q.shape[0]), S = static_cast<double>(a.q.shape[1]);
    const double HD = static_cast<double>(a.q.shape[2] * a.q.shape[3]);
    // Q K^T and P V: 2 * 2 * R * S^2 * Hh * D; the bias and mask read once.
    return OpCost{qkvo + static_cast<double>(a.bias.nbytes() + a.mask.nbytes()), 4.0 * R * S * S * HD, a.q.dtype};
  };
  d.workload_from_call = workload_from_call;
  d.architectures = {"openfold3"};
  d.test_workloads = {
      {{"rows", 1}, {"seq", 1}, {"heads", 1}, {"head_dim", 16}},
      {{"rows", 6}, {"seq", 13}, {"heads", 4}, {"head_dim", 32}, {"groups", 2}, {"mask", "random"}},
      {{"rows", 3}, {"seq", 70}, {"heads", 2}, {"head_dim", 24}, {"groups", 3}, {"dtype", "f16"}},
      {{"rows", 5}, {"seq", 33}, {"heads", 3}, {"head_dim", 40}, {"mask", "padded"}, {"dtype", "f32"}},
      {{"rows", 2}, {"seq", 65}, {"heads", 2}, {"head_dim", 128}, {"groups", 1}, {"mask", "random"}},
      {{"rows", 4}, {"seq", 9}, {"heads", 2}, {"head_dim", 64}, {"groups", 4}, {"mask", "padded"}, {"dtype", "f16"}},
      {{"rows", 0}, {"seq", 8}, {"heads", 2}, {"head_dim", 32}, {"groups", 1}},
  };
  // OpenFold3's trunk, bf16: triangle attention over a 384- and a 768-token crop (R = S = N,
  // 4 heads of 32, one bias for every row) and the single attention (one row of N tokens,
  // 16 heads of 24).
  for (int64_t n : {384, 768}) {
    d.bench_workloads.push_back({{"rows", n}, {"seq", n}, {"heads", 4}, {"head_dim", 32}, {"groups", 1}});
    d.bench_workloads.push_back({{"rows", 1}, {"seq", n}, {"heads", 16}, {"head_dim", 24}, {"groups", 1}});
  }
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("pair_bias_attention", cpu, pair_bias_attention_cpu);

}  // namespace
}  // namespace fk::ops
