// pairformer_block: definition (workloads, case, cost, tolerance), validation, the composed
// baseline (the seven calls of fk/ops/pairformer_block.h through the registry) and the
// oracle: the same seven calls, each to its part's CPU reference in double (the parts'
// CPU implementations are their references when the residual streams are f64).
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/pairformer_block.h"
#include "ops/common/case_builder.h"
#include "ops/common/validate.h"
#include "ops/pairformer/pairformer_tolerance.h"
#include "ops/pairformer/pairformer_block_composed.h"

namespace fk::ops {
namespace {

using A = PairformerBlockArgs;
using W = PairformerBlockWeights;
constexpr const char* kOp = A::kName;

int64_t dim_or(const TensorView& v, int d) { return v.rank > d ? v.shape[d] : -1; }

PairformerBlockDims validate(const A& a, DeviceType backend) {
  FK_CHECK(a.pair.rank == 4 && a.pair.shape[1] == a.pair.shape[2], kOp, ": pair must be [B, N, N, Cz], got ",
           describe(a.pair));
  const DType dt = a.w.tri_mul_out.in_weight.dtype;
  FK_CHECK(dt == DType::f32 || dt == DType::f16 || dt == DType::bf16, kOp,
           ": the weights must be f32, f16 or bf16, got tri_mul_out.in_weight ", describe(a.w.tri_mul_out.in_weight));
  expect_written_dtype(kOp, "pair", a.pair, dt, backend);
  expect_written_dtype(kOp, "single", a.single, dt, backend);
  expect_contiguous(kOp, "pair", a.pair);
  expect_contiguous(kOp, "single", a.single);
  PairformerBlockDims d;
  d.batch = a.pair.shape[0], d.tokens = a.pair.shape[1], d.c_z = a.pair.shape[3];
  FK_CHECK(a.single.rank == 3 && a.single.shape[0] == d.batch && a.single.shape[1] == d.tokens, kOp,
           ": single must be [", d.batch, ", ", d.tokens, ", Cs] (the pair's B and N), got ", describe(a.single));
  d.c_s = a.single.shape[2];
  if (arg_present(a.single_mask)) {
    FK_CHECK(a.single_mask.rank == 2 && a.single_mask.shape[0] == d.batch && a.single_mask.shape[1] == d.tokens,
             kOp, ": single_mask must be [", d.batch, ", ", d.tokens, "], got ", describe(a.single_mask));
    expect_dtype(kOp, "single_mask", a.single_mask, dt);
  }
  if (arg_present(a.pair_mask)) {
    FK_CHECK(a.pair_mask.rank == 3 && a.pair_mask.shape[0] == d.batch && a.pair_mask.shape[1] == d.tokens &&
                 a.pair_mask.shape[2] == d.tokens,
             kOp, ": pair_mask must be [", d.batch, ", ", d.tokens, ", ", d.tokens, "], got ", describe(a.pair_mask));
    expect_dtype(kOp, "pair_mask", a.pair_mask, dt);
  }
  // The sizes the workspace depends on; each part checks its own weights in full.
  d.c_mul = dim_or(a.w.tri_mul_out.out_weight, 1);
  FK_CHECK(d.c_mul > 0 && dim_or(a.w.tri_mul_in.out_weight, 1) == d.c_mul, kOp,
           ": tri_mul_out.out_weight and tri_mul_in.out_weight must both be [Cz, C] of one C, got ",
           describe(a.w.tri_mul_out.out_weight), " and ", describe(a.w.tri_mul_in.out_weight));
  const int64_t thd = dim_or(a.w.tri_att_start.out_weight, 1);
  FK_CHECK(thd > 0 && dim_or(a.w.tri_att_end.out_weight, 1) == thd, kOp,
           ": tri_att_start.out_weight and tri_att_end.out_weight must both be [Cz, Hh D] of one Hh D, got ",
           describe(a.w.tri_att_start.out_weight), " and ", describe(a.w.tri_att_end.out_weight));
  FK_CHECK(a.tri_heads > 0 && thd % a.tri_heads == 0, kOp, ": tri_heads ", a.tri_heads,
           " must be positive and divide the triangle attention's ", thd, " channels");
  d.tri_heads = a.tri_heads, d.tri_head_dim = thd / a.tri_heads;
  const int64_t shd = dim_or(a.w.attn_pair_bias.out_weight, 1);
  FK_CHECK(shd > 0 && a.single_heads > 0 && shd % a.single_heads == 0, kOp, ": single_heads ", a.single_heads,
           " must be positive and divide attn_pair_bias.out_weight's channels, got ",
           describe(a.w.attn_pair_bias.out_weight));
  d.single_heads = a.single_heads, d.single_head_dim = shd / a.single_heads;
  d.pair_hidden = dim_or(a.w.pair_transition.out_weight, 1);
  d.single_hidden = dim_or(a.w.single_transition.out_weight, 1);
  FK_CHECK(d.pair_hidden > 0 && d.single_hidden > 0, kOp,
           ": pair_transition.out_weight and single_transition.out_weight must be [C, F], got ",
           describe(a.w.pair_transition.out_weight), " and ", describe(a.w.single_transition.out_weight));
  const int64_t need = pairformer_block_workspace_elements(d);
  FK_CHECK(a.workspace.rank == 1 && a.workspace.shape[0] >= need && a.workspace.dtype == dt &&
               a.workspace.is_contiguous(),
           kOp, ": workspace must be a contiguous ", dtype_name(dt), "[W] with W >= ", need,
           " (pairformer_block_workspace_elements), got ", describe(a.workspace));
  FK_CHECK(a.workspace.device.type == a.pair.device.type, kOp, ": workspace must be on the pair's device");
  return d;
}

// Consecutive packed tensors from the start of the workspace, each aligned.
class Carver {
 public:
  explicit Carver(const TensorView& ws) : ws_(ws) {}
  TensorView take(std::initializer_list<int64_t> shape) {
    TensorView v = make_view(static_cast<char*>(ws_.data) + used_ * ws_.element_size(), shape, ws_.dtype, ws_.device);
    used_ += pairformer_workspace_round(v.numel());
    FK_CHECK(used_ <= ws_.shape[0], kOp, ": workspace layout overruns its ", ws_.shape[0], " elements");
    return v;
  }

 private:
  TensorView ws_;
  int64_t used_ = 0;
};

// A packed tensor seen as [rows, cols].
TensorView as_rows(const TensorView& t, int64_t rows, int64_t cols) {
  return make_view(t.data, {rows, cols}, t.dtype, t.device);
}

// The seven calls in order; `run(name, args)` makes each one. The single attention reads
// the pair from `pair_for_single` (the pair itself, but for the oracle: see reference()).
template <class Run>
void each_call(const A& a, const PairformerBlockDims& d, const TensorView& pair_for_single, Run&& run) {
  const int64_t B = d.batch, N = d.tokens, Cz = d.c_z, Cs = d.c_s, C = d.c_mul;
  const TensorView pair_mask = arg_present(a.pair_mask) ? a.pair_mask : TensorView{};
  const TensorView single_mask = arg_present(a.single_mask) ? a.single_mask : TensorView{};
  for (int incoming = 0; incoming < 2; ++incoming) {
    Carver ws(a.workspace);
    TriangleMultiplicationArgs t{};
    t.pair = a.pair;
    t.mask = pair_mask;
    t.w = incoming ? a.w.tri_mul_in : a.w.tri_mul_out;
    t.normed = ws.take({B, N, N, Cz});
    t.projected = ws.take({B, N, N, 4 * C + Cz});
    t.left = ws.take({B, C, N, N});
    t.right = ws.take({B, C, N, N});
    t.product = ws.take({B, N, N, C});
    t.update = ws.take({B, N, N, Cz});
    t.incoming = incoming;
    run(TriangleMultiplicationArgs::kName, &t);
  }
  const int64_t H = d.tri_heads, D = d.tri_head_dim;
  for (int ending = 0; ending < 2; ++ending) {
    Carver ws(a.workspace);
    TriangleAttentionArgs t{};
    t.pair = a.pair;
    t.mask = pair_mask;
    t.w = ending ? a.w.tri_att_end : a.w.tri_att_start;
    t.normed = ws.take({B, N, N, Cz});
    t.qkvg = ws.take({B, N, N, 4 * H * D});
    t.q = ws.take({B * N, N, H, D});
    t.k = ws.take({B * N, N, H, D});
    t.v = ws.take({B * N, N, H, D});
    t.bias = ws.take({B, H, N, N});
    t.attn = ws.take({B * N, N, H, D});
    t.gated = ws.take({B, N, N, H * D});
    t.update = ws.take({B, N, N, Cz});
    t.num_heads = static_cast<int32_t>(H);
    t.ending = ending;
    run(TriangleAttentionArgs::kName, &t);
  }
  auto transition = [&](const TensorView& x, int64_t rows, int64_t c, int64_t f, const TransitionWeights& w) {
    Carver ws(a.workspace);
    TransitionArgs t{};
    t.x = as_rows(x, rows, c);
    t.w = w;
    t.normed = ws.take({rows, c});
    t.hidden = ws.take({rows, 2 * f});
    t.act = ws.take({rows, f});
    t.update = ws.take({rows, c});
    run(TransitionArgs::kName, &t);
  };
  transition(a.pair, B * N * N, Cz, d.pair_hidden, a.w.pair_transition);
  {
    const int64_t Hs = d.single_heads, Ds = d.single_head_dim;
    Carver ws(a.workspace);
    SingleAttentionPairBiasArgs t{};
    t.single = a.single;
    t.pair = pair_for_single;
    t.mask = single_mask;
    t.w = a.w.attn_pair_bias;
    t.normed_single = ws.take({B, N, Cs});
    t.normed_pair = ws.take({B, N, N, Cz});
    t.q = ws.take({B, N, Hs, Ds});
    t.kvg = ws.take({B, N, 3 * Hs * Ds});
    t.k = ws.take({B, N, Hs, Ds});
    t.v = ws.take({B, N, Hs, Ds});
    t.g = ws.take({B, N, Hs, Ds});
    t.bias = ws.take({B, Hs, N, N});
    t.attn = ws.take({B, N, Hs, Ds});
    t.update = ws.take({B, N, Cs});
    t.num_heads = static_cast<int32_t>(Hs);
    run(SingleAttentionPairBiasArgs::kName, &t);
  }
  transition(a.single, B * N, Cs, d.single_hidden, a.w.single_transition);
}

template <DeviceType Backend>
fk_status composed(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    const PairformerBlockDims d = validate(a, Backend);
    if (d.batch == 0 || d.tokens == 0) return;
    each_call(a, d, a.pair,
              [&](const char* name, const void* part) { OpRegistry::global().call(name, Backend, part, stream); });
  });
}

// The oracle: single and pair are f64; each part runs its CPU baseline, which for f64
// residual streams is its double-precision reference (never a candidate). The single
// attention reads z as an input, in the dtype: the f64 pair rounded to it (as the
// baseline's pair buffer holds it) just before that call.
void reference(const A& a) {
  const PairformerBlockDims d = validate(a, DeviceType::cpu);
  if (d.batch == 0 || d.tokens == 0) return;
  const DType dt = a.w.tri_mul_out.in_weight.dtype;
  Tensor rounded = Tensor::empty({d.batch, d.tokens, d.tokens, d.c_z}, dt);
  each_call(a, d, rounded.view(), [&](const char* name, const void* part) {
    if (std::string_view(name) == SingleAttentionPairBiasArgs::kName) {
      const int64_t n = rounded.numel(), es = rounded.view().element_size();
      for (int64_t i = 0; i < n; ++i)
        store_element(static_cast<char*>(rounded.data()) + i * es, dt, static_cast<const double*>(a.pair.data)[i]);
    }
    const fk_op_fn ref = OpRegistry::global().baseline(name, DeviceType::cpu);
    FK_CHECK(ref != nullptr, kOp, ": ", name, " has no CPU baseline");
    FK_CHECK(ref(part, nullptr) == FK_OK, kOp, ": the reference of ", name, " failed: ", last_error_message());
  });
}

fk_status pairformer_block_cpu(const void* args, void* stream) {
  const auto& a = *static_cast<const A*>(args);
  if (a.pair.dtype != DType::f64) return pairformer_block_composed_cpu(args, stream);
  return op_guard([&] { reference(a); });
}

// One weight tensor of the block: where it lives in the args, its shape and how a test
// case draws it.
enum class Init : uint8_t { ln_weight, ln_bias, projection, bias };
struct WeightField {
  std::string name;
  size_t offset;
  std::vector<int64_t> shape;
  Init init;
};

std::vector<WeightField> weight_fields(const PairformerBlockDims& d) {
  std::vector<WeightField> f;
  const int64_t Cz = d.c_z, Cs = d.c_s, C = d.c_mul, th = d.tri_heads, thd = d.tri_heads * d.tri_head_dim;
  const int64_t sh = d.single_heads, shd = d.single_heads * d.single_head_dim;
  auto add = [&](std::string name, size_t off, std::vector<int64_t> shape, Init init) {
    f.push_back({std::move(name), off, std::move(shape), init});
  };
  for (const auto& [p, base] : {std::pair<const char*, size_t>{"tri_mul_out", offsetof(W, tri_mul_out)},
                                {"tri_mul_in", offsetof(W, tri_mul_in)}}) {
    using T = TriangleMultiplicationWeights;
    const std::string s = std::string(p) + ".";
    add(s + "ln_in_weight", base + offsetof(T, ln_in_weight), {Cz}, Init::ln_weight);
    add(s + "ln_in_bias", base + offsetof(T, ln_in_bias), {Cz}, Init::ln_bias);
    add(s + "in_weight", base + offsetof(T, in_weight), {4 * C + Cz, Cz}, Init::projection);
    add(s + "ln_out_weight", base + offsetof(T, ln_out_weight), {C}, Init::ln_weight);
    add(s + "ln_out_bias", base + offsetof(T, ln_out_bias), {C}, Init::ln_bias);
    add(s + "out_weight", base + offsetof(T, out_weight), {Cz, C}, Init::projection);
  }
  for (const auto& [p, base] : {std::pair<const char*, size_t>{"tri_att_start", offsetof(W, tri_att_start)},
                                {"tri_att_end", offsetof(W, tri_att_end)}}) {
    using T = TriangleAttentionWeights;
    const std::string s = std::string(p) + ".";
    add(s + "ln_weight", base + offsetof(T, ln_weight), {Cz}, Init::ln_weight);
    add(s + "ln_bias", base + offsetof(T, ln_bias), {Cz}, Init::ln_bias);
    add(s + "qkvg_weight", base + offsetof(T, qkvg_weight), {4 * thd, Cz}, Init::projection);
    add(s + "bias_weight", base + offsetof(T, bias_weight), {th, Cz}, Init::projection);
    add(s + "out_weight", base + offsetof(T, out_weight), {Cz, thd}, Init::projection);
  }
  auto transition = [&](const char* p, size_t base, int64_t c, int64_t hidden) {
    using T = TransitionWeights;
    const std::string s = std::string(p) + ".";
    add(s + "ln_weight", base + offsetof(T, ln_weight), {c}, Init::ln_weight);
    add(s + "ln_bias", base + offsetof(T, ln_bias), {c}, Init::ln_bias);
    add(s + "in_weight", base + offsetof(T, in_weight), {2 * hidden, c}, Init::projection);
    add(s + "out_weight", base + offsetof(T, out_weight), {c, hidden}, Init::projection);
  };
  transition("pair_transition", offsetof(W, pair_transition), Cz, d.pair_hidden);
  {
    using T = SingleAttentionPairBiasWeights;
    const size_t base = offsetof(W, attn_pair_bias);
    add("attn_pair_bias.ln_single_weight", base + offsetof(T, ln_single_weight), {Cs}, Init::ln_weight);
    add("attn_pair_bias.ln_single_bias", base + offsetof(T, ln_single_bias), {Cs}, Init::ln_bias);
    add("attn_pair_bias.ln_pair_weight", base + offsetof(T, ln_pair_weight), {Cz}, Init::ln_weight);
    add("attn_pair_bias.ln_pair_bias", base + offsetof(T, ln_pair_bias), {Cz}, Init::ln_bias);
    add("attn_pair_bias.q_weight", base + offsetof(T, q_weight), {shd, Cs}, Init::projection);
    add("attn_pair_bias.q_bias", base + offsetof(T, q_bias), {shd}, Init::bias);
    add("attn_pair_bias.kvg_weight", base + offsetof(T, kvg_weight), {3 * shd, Cs}, Init::projection);
    add("attn_pair_bias.bias_weight", base + offsetof(T, bias_weight), {sh, Cz}, Init::projection);
    add("attn_pair_bias.out_weight", base + offsetof(T, out_weight), {Cs, shd}, Init::projection);
  }
  transition("single_transition", offsetof(W, single_transition), Cs, d.single_hidden);
  return f;
}

// The argument layout: the streams, the masks, every weight (named as in PairformerBlockWeights),
// the workspace.
std::vector<TensorArg> layout() {
  std::vector<TensorArg> args = {{"single", ArgRole::inout, offsetof(A, single)},
                                 {"pair", ArgRole::inout, offsetof(A, pair)},
                                 {"single_mask", ArgRole::in, offsetof(A, single_mask)},
                                 {"pair_mask", ArgRole::in, offsetof(A, pair_mask)}};
  for (const WeightField& f : weight_fields(PairformerBlockDims{}))
    args.push_back({f.name, ArgRole::in, offsetof(A, w) + f.offset});
  args.push_back({"workspace", ArgRole::workspace, offsetof(A, workspace)});
  return args;
}

PairformerBlockDims dims_of(const Json& w) {
  PairformerBlockDims d;
  d.batch = wl_int(w, "batch", 1);
  d.tokens = wl_int(w, "tokens");
  d.c_s = wl_int(w, "c_s");
  d.c_z = wl_int(w, "c_z");
  d.c_mul = wl_int(w, "c_mul", d.c_z);
  d.tri_heads = wl_int(w, "tri_heads");
  d.tri_head_dim = wl_int(w, "tri_head_dim");
  d.single_heads = wl_int(w, "single_heads");
  d.single_head_dim = wl_int(w, "single_head_dim");
  const int64_t factor = wl_int(w, "transition_factor", 4);
  d.pair_hidden = factor * d.c_z;
  d.single_hidden = factor * d.c_s;
  FK_CHECK(d.batch >= 0 && d.tokens >= 0 && d.c_s > 0 && d.c_z > 0 && d.c_mul > 0 && d.tri_heads > 0 &&
               d.tri_head_dim > 0 && d.single_heads > 0 && d.single_head_dim > 0 && factor > 0,
           kOp, " workload needs tokens, c_s, c_z, tri_heads, tri_head_dim, single_heads and single_head_dim (all ",
           "positive but tokens, which may be 0); got ", w.dump());
  return d;
}

// Workload fields: tokens, c_s, c_z, tri_heads, tri_head_dim, single_heads, single_head_dim
// (required); batch [1], c_mul [c_z], transition_factor [4], dtype [bf16], lengths (the
// real tokens of each structure; the rest are padding, masked out) [no masks].
OpCase make_case(const Json& w, uint64_t seed) {
  const PairformerBlockDims d = dims_of(w);
  const DType dt = wl_dtype(w);
  const std::vector<TensorArg> args = layout();
  OpCase c = begin_case<A>(w, args.size());
  const int64_t B = d.batch, N = d.tokens;
  size_t i = 0;
  c.tensors[i++] = random_tensor({B, N, d.c_s}, dt, seed, 1, -2.f, 2.f);
  c.tensors[i++] = random_tensor({B, N, N, d.c_z}, dt, seed, 2, -2.f, 2.f);
  if (w.contains("lengths")) {
    const std::vector<int64_t> lengths = wl_int_list(w, "lengths");
    FK_CHECK(static_cast<int64_t>(lengths.size()) == B, kOp, " workload: lengths needs one entry per structure (",
             B, "), got ", w.dump());
    Tensor single = Tensor::zeros({B, N}, dt), pair = Tensor::zeros({B, N, N}, dt);
    for (int64_t b = 0; b < B; ++b) {
      FK_CHECK(lengths[b] >= 0 && lengths[b] <= N, kOp, " workload: lengths[", b, "] must be in [0, ", N, "]");
      for (int64_t t = 0; t < lengths[b]; ++t) set(single.view(), 1.0, b, t);
      for (int64_t r = 0; r < lengths[b]; ++r)
        for (int64_t t = 0; t < lengths[b]; ++t) set(pair.view(), 1.0, b, r, t);
    }
    c.tensors[i++] = single;
    c.tensors[i++] = pair;
  } else {
    c.tensors[i++] = absent_tensor(dt);
    c.tensors[i++] = absent_tensor(dt);
  }
  uint64_t stream = 10;
  for (const WeightField& f : weight_fields(d)) {
    const Shape shape(f.shape.begin(), f.shape.end());
    switch (f.init) {
      case Init::ln_weight:
        c.tensors[i++] = random_tensor(shape, dt, seed, stream++, 0.5f, 1.5f);
        break;
      case Init::ln_bias:
      case Init::bias:
        c.tensors[i++] = random_tensor(shape, dt, seed, stream++, -0.2f, 0.2f);
        break;
      case Init::projection: {  // 1/sqrt(fan-in): updates of order one
        const float r = static_cast<float>(std::sqrt(3.0 / static_cast<double>(f.shape[1])));
        c.tensors[i++] = random_tensor(shape, dt, seed, stream++, -r, r);
        break;
      }
    }
  }
  c.tensors[i++] = Tensor::empty({pairformer_block_workspace_elements(d)}, dt);
  A& a = c.as<A>();
  a.tri_heads = static_cast<int32_t>(d.tri_heads);
  a.single_heads = static_cast<int32_t>(d.single_heads);
  c.bind(args);
  return c;
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  const PairformerBlockDims d = validate(a, a.pair.device.type);
  Json w{{"batch", d.batch},
         {"tokens", d.tokens},
         {"c_s", d.c_s},
         {"c_z", d.c_z},
         {"c_mul", d.c_mul},
         {"tri_heads", d.tri_heads},
         {"tri_head_dim", d.tri_head_dim},
         {"single_heads", d.single_heads},
         {"single_head_dim", d.single_head_dim},
         {"transition_factor", d.c_z > 0 ? d.pair_hidden / d.c_z : 4},
         {"dtype", std::string(dtype_name(a.w.tri_mul_out.in_weight.dtype))}};
  // Masks: each structure's real tokens, counted where the mask is on the host; a device
  // mask is not read (its last eighth of tokens is taken as padding, so the rebuilt case
  // has masks of the same shapes).
  if (arg_present(a.single_mask) || arg_present(a.pair_mask)) {
    Json lengths = Json::array();
    for (int64_t b = 0; b < d.batch; ++b) {
      int64_t real = d.tokens - d.tokens / 8;
      if (arg_present(a.single_mask) && a.single_mask.device.is_cpu()) {
        real = 0;
        for (int64_t t = 0; t < d.tokens; ++t) real += get(a.single_mask, b, t) != 0;
      }
      lengths.push_back(real);
    }
    w["lengths"] = lengths;
  }
  return w;
}

OpCost cost(const OpCase& c) {
  const auto& a = c.as<A>();
  // The case's own device: cost is asked of device cases too (the GPU tests' timing).
  const PairformerBlockDims d = validate(a, a.pair.device.type);
  const double B = static_cast<double>(d.batch), N = static_cast<double>(d.tokens);
  const double P = B * N * N, T = B * N, Cz = static_cast<double>(d.c_z), Cs = static_cast<double>(d.c_s);
  const double C = static_cast<double>(d.c_mul), th = static_cast<double>(d.tri_heads);
  const double thd = th * static_cast<double>(d.tri_head_dim);
  const double sh = static_cast<double>(d.single_heads), shd = sh * static_cast<double>(d.single_head_dim);
  const double Fz = static_cast<double>(d.pair_hidden), Fs = static_cast<double>(d.single_hidden);
  const double tri_mul = 2 * P * Cz * (4 * C + Cz) + 2 * P * N * C + 2 * P * C * Cz;
  const double tri_att = 2 * P * Cz * (4 * thd + th) + 4 * P * N * thd + 2 * P * thd * Cz;
  const double single = 2 * T * Cs * 4 * shd + 2 * P * Cz * sh + 4 * P * shd + 2 * T * shd * Cs;
  const double trans = 2 * P * 3 * Cz * Fz + 2 * T * 3 * Cs * Fs;
  double weights = 0;
  for (const WeightField& f : weight_fields(d)) {
    double n = 1;
    for (int64_t s : f.shape) n *= static_cast<double>(s);
    weights += n;
  }
  const double es = static_cast<double>(a.w.tri_mul_out.in_weight.element_size());
  // Each representation read and written once, the weights read once.
  return OpCost{(weights + 2 * (P * Cz + T * Cs)) * es, 2 * tri_mul + 2 * tri_att + single + trans,
                a.w.tri_mul_out.in_weight.dtype};
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "pairformer";
  d.level = "L3";
  d.summary = "AlphaFold3's Pairformer block (Algorithm 17): triangle multiplication outgoing and incoming, "
              "triangle attention starting and ending node, pair transition; single attention with pair bias, "
              "single transition; in place on s and z";
  d.args_size = sizeof(A);
  d.tensor_args = layout();
  d.make_case = make_case;
  d.cost = cost;
  // Seven residual updates, each rounded to the dtype where the oracle keeps the streams
  // in f64 (the parts' references round their own intermediates as the baseline does); the
  // streams are of order a few units, so a unit in their last place is several of 1's. The
  // composed baseline's worst element is about a fifth of this bound on the test workloads.
  d.tolerance = [](const OpCase& c, const TensorArg&, DType) {
    const double ulp = pairformer_rounding_unit(c.as<A>().w.tri_mul_out.in_weight.dtype);
    return Tolerance{32 * ulp, 16 * ulp};
  };
  d.workload_from_call = workload_from_call;
  d.covers = {TriangleMultiplicationArgs::kName, TriangleAttentionArgs::kName, TransitionArgs::kName,
              SingleAttentionPairBiasArgs::kName};
  d.composed[0] = pairformer_block_composed_cpu;
  d.composed[1] = pairformer_block_composed_cuda;
  d.architectures = {"openfold3"};
  const Json small{{"tokens", 8},       {"c_s", 32},     {"c_z", 16},          {"c_mul", 16},
                   {"tri_heads", 2},    {"tri_head_dim", 8}, {"single_heads", 2}, {"single_head_dim", 16}};
  auto with = [&](Json extra) {
    Json w = small;
    for (auto& [k, v] : extra.items()) w[k] = v;
    return w;
  };
  // No f32 workload: the GPU oracle test runs each on CUDA, where the attentions have no f32
  // path (linear has none); on the CPU, f32 is covered by the op test.
  d.test_workloads = {
      with({{"dtype", "bf16"}}),
      with({{"batch", 2}, {"tokens", 7}, {"lengths", {7, 4}}, {"dtype", "bf16"}}),
      with({{"tokens", 1}, {"dtype", "f16"}}),
      with({{"tokens", 12}, {"lengths", {10}}, {"c_mul", 24}, {"transition_factor", 2}, {"dtype", "f16"}}),
  };
  // OpenFold3's trunk (c_s 384, c_z 128, triangle heads 4 x 32, single heads 16 x 24, C 128),
  // bf16: a 384-token crop, the same crop holding a 300-token structure, and 768 tokens.
  const Json of3{{"c_s", 384},       {"c_z", 128},           {"c_mul", 128},       {"tri_heads", 4},
                 {"tri_head_dim", 32}, {"single_heads", 16}, {"single_head_dim", 24}, {"dtype", "bf16"}};
  auto bench = [&](Json extra) {
    Json w = of3;
    for (auto& [k, v] : extra.items()) w[k] = v;
    return w;
  };
  d.bench_workloads = {bench({{"tokens", 384}}), bench({{"tokens", 384}, {"lengths", {300}}}),
                       bench({{"tokens", 768}})};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("pairformer_block", cpu, pairformer_block_cpu);

}  // namespace

fk_status pairformer_block_composed_cpu(const void* args, void* stream) {
  return composed<DeviceType::cpu>(args, stream);
}
fk_status pairformer_block_composed_cuda(const void* args, void* stream) {
  return composed<DeviceType::cuda>(args, stream);
}

}  // namespace fk::ops
