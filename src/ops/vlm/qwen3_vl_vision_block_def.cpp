// qwen3_vl_vision_block: definition (workloads, case, cost, tolerance), validation, the
// composed baseline (its parts through the registry) and the CPU reference in double (the
// oracle, when hidden is f64), in the order of fk/ops/vision_block.h.
#include <algorithm>
#include <cmath>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/elementwise.h"
#include "fk/ops/linear.h"
#include "fk/ops/norm.h"
#include "fk/ops/rope.h"
#include "fk/ops/varlen_attention.h"
#include "fk/ops/vision_block.h"
#include "ops/activation/activation_defs.h"
#include "ops/activation/activation_reference.h"
#include "ops/common/case_builder.h"
#include "ops/common/layer_cost.h"
#include "ops/common/packed_validate.h"
#include "ops/common/validate.h"
#include "ops/common/views.h"
#include "ops/linear/linear_reference.h"
#include "ops/norm/norm_reference.h"
#include "ops/vlm/qwen3_vl_vision_block_composed.h"

namespace fk::ops {
namespace {

using A = Qwen3VLVisionBlockArgs;
constexpr const char* kOp = A::kName;

struct Shape {
  int64_t tokens, hidden, inter, heads, head_dim, frames;
};

Shape validate(const A& a, DeviceType backend) {
  FK_CHECK(a.hidden.rank == 2, kOp, ": hidden must be [patches, hidden], got ", describe(a.hidden));
  const DType dt = a.qkv_weight.dtype;
  FK_CHECK(dt == DType::f16 || dt == DType::bf16, kOp, ": the weights must be f16 or bf16, got ", describe(a.qkv_weight));
  expect_written_dtype(kOp, "hidden", a.hidden, dt, backend);
  expect_contiguous(kOp, "hidden", a.hidden);
  Shape s{a.hidden.shape[0], a.hidden.shape[1], a.fc1_weight.rank == 2 ? a.fc1_weight.shape[0] : -1, a.num_heads, 0,
          0};
  FK_CHECK(s.heads > 0 && s.hidden % s.heads == 0 && (s.hidden / s.heads) % 2 == 0, kOp, ": num_heads ", s.heads,
           " must divide the hidden size ", s.hidden, " into heads of an even size (the rotation pairs halves)");
  s.head_dim = s.hidden / s.heads;
  for (const auto& [name, v] : {std::pair<const char*, const TensorView*>{"norm1", &a.norm1},
                                {"norm1_bias", &a.norm1_bias}, {"proj_bias", &a.proj_bias}, {"norm2", &a.norm2},
                                {"norm2_bias", &a.norm2_bias}, {"fc2_bias", &a.fc2_bias}})
    expect_packed_vector(kOp, name, *v, s.hidden, dt);
  expect_packed_matrix(kOp, "qkv_weight", a.qkv_weight, 3 * s.hidden, s.hidden, dt);
  expect_packed_vector(kOp, "qkv_bias", a.qkv_bias, 3 * s.hidden, dt);
  expect_packed_matrix(kOp, "proj_weight", a.proj_weight, s.hidden, s.hidden, dt);
  FK_CHECK(s.inter > 0, kOp, ": fc1_weight must be [intermediate, ", s.hidden, "], got ", describe(a.fc1_weight));
  expect_packed_matrix(kOp, "fc1_weight", a.fc1_weight, s.inter, s.hidden, dt);
  expect_packed_vector(kOp, "fc1_bias", a.fc1_bias, s.inter, dt);
  expect_packed_matrix(kOp, "fc2_weight", a.fc2_weight, s.hidden, s.inter, dt);
  FK_CHECK(a.positions.rank == 1 && a.positions.shape[0] == s.tokens, kOp, ": positions must be [", s.tokens,
           "] (one cache row per patch), got ", describe(a.positions));
  expect_dtype(kOp, "positions", a.positions, DType::i32);
  FK_CHECK(a.cos_sin_cache.rank == 2 && a.cos_sin_cache.shape[1] == s.head_dim, kOp, ": cos_sin_cache must be [P, ",
           s.head_dim, "] (cos | sin of each head's ", s.head_dim / 2, " angles), got ", describe(a.cos_sin_cache));
  expect_dtype(kOp, "cos_sin_cache", a.cos_sin_cache, DType::f32);
  FK_CHECK(a.cu_seqlens.rank == 1 && a.cu_seqlens.shape[0] >= 2 && a.cu_seqlens_host.rank == 1 &&
               a.cu_seqlens_host.shape[0] == a.cu_seqlens.shape[0],
           kOp, ": cu_seqlens and cu_seqlens_host must be [frames + 1] alike, got ", describe(a.cu_seqlens), " and ",
           describe(a.cu_seqlens_host));
  expect_dtype(kOp, "cu_seqlens", a.cu_seqlens, DType::i32);
  expect_dtype(kOp, "cu_seqlens_host", a.cu_seqlens_host, DType::i32);
  s.frames = a.cu_seqlens.shape[0] - 1;
  int64_t longest = 0;
  for (int64_t b = 0; b < s.frames; ++b) {
    const int64_t lo = get_index(a.cu_seqlens_host, b), hi = get_index(a.cu_seqlens_host, b + 1);
    FK_CHECK(lo <= hi, kOp, ": cu_seqlens_host must not decrease (", lo, " then ", hi, ")");
    longest = std::max(longest, hi - lo);
  }
  FK_CHECK(get_index(a.cu_seqlens_host, 0) == 0 && get_index(a.cu_seqlens_host, s.frames) == s.tokens, kOp,
           ": cu_seqlens_host must run from 0 to the ", s.tokens, " patches of hidden");
  FK_CHECK(a.max_seqlen >= longest, kOp, ": max_seqlen ", a.max_seqlen, " is below the longest frame (", longest,
           " patches)");
  expect_packed_matrix(kOp, "normed", a.normed, s.tokens, s.hidden, dt);
  expect_packed_matrix(kOp, "qkv", a.qkv, s.tokens, 3 * s.hidden, dt);
  expect_packed_matrix(kOp, "attn_out", a.attn_out, s.tokens, s.hidden, dt);
  expect_packed_matrix(kOp, "sub", a.sub, s.tokens, s.hidden, dt);
  expect_packed_matrix(kOp, "inter", a.inter, s.tokens, s.inter, dt);
  expect_packed_matrix(kOp, "act", a.act, s.tokens, s.inter, dt);
  FK_CHECK(a.eps > 0, kOp, ": eps must be positive, got ", a.eps);
  return s;
}

// Columns [col, col + s.hidden) of a [T, *] matrix, flat ([T, H]) or per head ([T, heads, D]).
TensorView columns_of(const TensorView& m, int64_t col, const Shape& s) {
  return views::block(m, 0, s.tokens, col, s.hidden);
}
TensorView heads_of(const TensorView& m, int64_t col, const Shape& s) {
  return views::heads(columns_of(m, col, s), s.heads, s.head_dim);
}

RotaryEmbeddingArgs rope(const A& a, const Shape& s) {
  RotaryEmbeddingArgs r{};
  r.positions = a.positions;
  r.query = columns_of(a.qkv, 0, s);
  r.key = columns_of(a.qkv, s.hidden, s);
  r.cos_sin_cache = a.cos_sin_cache;
  r.head_size = static_cast<int32_t>(s.head_dim);
  r.style = RopeStyle::neox;
  return r;
}

VarlenAttentionArgs attention(const A& a, const Shape& s, const TensorView& out) {
  VarlenAttentionArgs v{};
  v.out = out;
  v.q = heads_of(a.qkv, 0, s);
  v.k = heads_of(a.qkv, s.hidden, s);
  v.v = heads_of(a.qkv, 2 * s.hidden, s);
  v.cu_seqlens_q = v.cu_seqlens_k = a.cu_seqlens;
  v.max_seqlen_q = v.max_seqlen_k = a.max_seqlen;
  v.sm_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.head_dim)));
  v.causal = 0;
  return v;
}

template <DeviceType B>
fk_status composed(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    const Shape s = validate(a, B);
    if (s.tokens == 0) return;
    const TensorView none{};
    call_op(LayerNormArgs{a.normed, a.hidden, a.norm1, a.norm1_bias, a.eps}, B, stream);
    call_op(LinearArgs{a.qkv, a.normed, a.qkv_weight, a.qkv_bias, none, none}, B, stream);
    call_op(rope(a, s), B, stream);
    call_op(attention(a, s, heads_of(a.attn_out, 0, s)), B, stream);
    call_op(LinearArgs{a.sub, a.attn_out, a.proj_weight, a.proj_bias, none, none}, B, stream);
    call_op(AddArgs{a.hidden, a.hidden, a.sub}, B, stream);
    call_op(LayerNormArgs{a.normed, a.hidden, a.norm2, a.norm2_bias, a.eps}, B, stream);
    call_op(LinearArgs{a.inter, a.normed, a.fc1_weight, a.fc1_bias, none, none}, B, stream);
    call_op(GeluArgs{a.act, a.inter, a.gelu}, B, stream);
    call_op(LinearArgs{a.sub, a.act, a.fc2_weight, a.fc2_bias, none, none}, B, stream);
    call_op(AddArgs{a.hidden, a.hidden, a.sub}, B, stream);
  });
}

// The oracle: hidden is f64. q, k, v (the qkv workspace, rotated in place by
// rotary_embedding's double-precision CPU baseline) are rounded to the dtype, as
// varlen_attention reads them; so is the residual sum between the halves (the add op's
// output, which the second LayerNorm and the last add read). Everything else is f64.
void reference(const A& a) {
  const Shape s = validate(a, DeviceType::cpu);
  if (s.tokens == 0) return;
  const DType dt = a.qkv_weight.dtype;
  const TensorView none{};
  auto f64 = [](int64_t r, int64_t c) { return Tensor::empty({r, c}, DType::f64); };
  Tensor normed = f64(s.tokens, s.hidden), attn = f64(s.tokens, s.hidden), sub = f64(s.tokens, s.hidden),
         inter = f64(s.tokens, s.inter), act = f64(s.tokens, s.inter);
  layer_norm_reference(normed.view(), a.hidden, a.norm1, &a.norm1_bias, a.eps);
  linear_reference(LinearArgs{a.qkv, normed.view(), a.qkv_weight, a.qkv_bias, none, none});
  // rotary_embedding's and varlen_attention's CPU baselines are their double-precision
  // references (never candidates).
  const RotaryEmbeddingArgs r = rope(a, s);
  const fk_op_fn rope_reference = OpRegistry::global().baseline(RotaryEmbeddingArgs::kName, DeviceType::cpu);
  FK_CHECK(rope_reference != nullptr && rope_reference(&r, nullptr) == FK_OK, kOp, ": the rope reference failed: ",
           last_error_message());
  const VarlenAttentionArgs va = attention(a, s, heads_of(attn.view(), 0, s));
  const fk_op_fn attention_reference = OpRegistry::global().baseline(VarlenAttentionArgs::kName, DeviceType::cpu);
  FK_CHECK(attention_reference != nullptr && attention_reference(&va, nullptr) == FK_OK, kOp,
           ": the attention reference failed: ", last_error_message());
  linear_reference(LinearArgs{sub.view(), attn.view(), a.proj_weight, a.proj_bias, none, none});
  for (int64_t t = 0; t < s.tokens; ++t)
    for (int64_t h = 0; h < s.hidden; ++h)
      set(a.hidden, round_to_dtype(get(a.hidden, t, h) + get(sub.view(), t, h), dt), t, h);
  layer_norm_reference(normed.view(), a.hidden, a.norm2, &a.norm2_bias, a.eps);
  linear_reference(LinearArgs{inter.view(), normed.view(), a.fc1_weight, a.fc1_bias, none, none});
  elementwise_reference(act.view(), inter.view(), [g = a.gelu](double x) { return gelu_ref(x, g); });
  linear_reference(LinearArgs{sub.view(), act.view(), a.fc2_weight, a.fc2_bias, none, none});
  for (int64_t t = 0; t < s.tokens; ++t)
    for (int64_t h = 0; h < s.hidden; ++h) set(a.hidden, get(a.hidden, t, h) + get(sub.view(), t, h), t, h);
}

fk_status qwen3_vl_vision_block_cpu(const void* args, void* stream) {
  const auto& a = *static_cast<const A*>(args);
  if (a.hidden.dtype != DType::f64) return qwen3_vl_vision_block_composed_cpu(args, stream);
  return op_guard([&] { reference(a); });
}

// The workload of a captured call.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  Json lens = Json::array();
  for (int64_t b = 0; b + 1 < a.cu_seqlens_host.shape[0]; ++b)
    lens.push_back(get_index(a.cu_seqlens_host, b + 1) - get_index(a.cu_seqlens_host, b));
  return Json{{"hidden", a.hidden.shape[1]},
              {"heads", a.num_heads},
              {"intermediate", a.fc1_weight.shape[0]},
              {"seq_lens", lens},
              {"dtype", std::string(dtype_name(a.qkv_weight.dtype))},
              {"eps", a.eps},
              {"approximate", a.gelu == GeluApprox::tanh ? "tanh" : "none"}};
}

// Workload fields: hidden, heads (dividing hidden into even head sizes), intermediate,
// seq_lens (each frame's patches: grid_h * grid_w) required; dtype [bf16], eps [1e-6],
// approximate ["tanh"].
OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const int64_t H = wl_int(w, "hidden"), heads = wl_int(w, "heads"), I = wl_int(w, "intermediate");
  FK_CHECK(H > 0 && heads > 0 && H % heads == 0 && (H / heads) % 2 == 0 && I > 0, kOp,
           " workload needs hidden, heads dividing it into even head sizes and intermediate, all positive; got ",
           w.dump());
  FK_CHECK(w.contains("seq_lens") && w["seq_lens"].is_array() && !w["seq_lens"].empty(), kOp,
           " workload needs seq_lens, a non-empty list of each frame's patches; got ", w.dump());
  const DType dt = w.contains("dtype") ? wl_dtype(w) : DType::bf16;
  const auto lens = w["seq_lens"].get<std::vector<int64_t>>();
  const int64_t D = H / heads;
  OpCase c = begin_case<A>(w, 23);
  Tensor cu = Tensor::empty({static_cast<int64_t>(lens.size()) + 1}, DType::i32);
  int64_t T = 0, longest = 0;
  cu.data_as<int32_t>()[0] = 0;
  for (size_t b = 0; b < lens.size(); ++b) {
    FK_CHECK(lens[b] >= 0, kOp, " workload: seq_lens[", b, "] is negative");
    T += lens[b];
    longest = std::max(longest, lens[b]);
    cu.data_as<int32_t>()[b + 1] = static_cast<int32_t>(T);
  }
  // Weights scaled by 1/sqrt(fan-in) (activations of order one through the block); norms
  // around one; hidden of order one.
  const auto weight = [&](int64_t rows, int64_t cols, uint64_t stream) {
    const float r = static_cast<float>(std::sqrt(3.0 / static_cast<double>(cols)));
    return random_tensor({rows, cols}, dt, seed, stream, -r, r);
  };
  const auto vector = [&](int64_t n, uint64_t stream, float lo, float hi) {
    return random_tensor({n}, dt, seed, stream, lo, hi);
  };
  c.tensors[0] = random_tensor({T, H}, dt, seed, 1, -2.f, 2.f);
  c.tensors[1] = vector(H, 2, 0.5f, 1.5f);
  c.tensors[2] = vector(H, 3, -0.2f, 0.2f);
  c.tensors[3] = weight(3 * H, H, 4);
  c.tensors[4] = vector(3 * H, 5, -0.2f, 0.2f);
  c.tensors[5] = weight(H, H, 6);
  c.tensors[6] = vector(H, 7, -0.2f, 0.2f);
  c.tensors[7] = vector(H, 8, 0.5f, 1.5f);
  c.tensors[8] = vector(H, 9, -0.2f, 0.2f);
  c.tensors[9] = weight(I, H, 10);
  c.tensors[10] = vector(I, 11, -0.2f, 0.2f);
  c.tensors[11] = weight(H, I, 12);
  c.tensors[12] = vector(H, 13, -0.2f, 0.2f);
  // Each patch its own row of a table of rotations by random angles (the tower's table holds
  // each patch's 2-D angles the same way).
  Tensor pos = Tensor::empty({T}, DType::i32);
  for (int64_t i = 0; i < T; ++i) pos.data_as<int32_t>()[i] = static_cast<int32_t>(i);
  c.tensors[13] = pos;
  const int64_t P = std::max<int64_t>(T, 1);
  const Tensor angles = random_tensor({P, D / 2}, DType::f32, seed, 14, -3.14159f, 3.14159f);
  Tensor cache = Tensor::empty({P, D}, DType::f32);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t i = 0; i < D / 2; ++i) {
      const float th = angles.data_as<float>()[p * (D / 2) + i];
      cache.data_as<float>()[p * D + i] = std::cos(th);
      cache.data_as<float>()[p * D + D / 2 + i] = std::sin(th);
    }
  c.tensors[14] = cache;
  c.tensors[15] = cu;
  c.tensors[16] = cu.clone();
  c.tensors[17] = Tensor::empty({T, H}, dt);
  c.tensors[18] = Tensor::empty({T, 3 * H}, dt);
  c.tensors[19] = Tensor::empty({T, H}, dt);
  c.tensors[20] = Tensor::empty({T, H}, dt);
  c.tensors[21] = Tensor::empty({T, I}, dt);
  c.tensors[22] = Tensor::empty({T, I}, dt);
  A& a = c.as<A>();
  a.num_heads = static_cast<int32_t>(heads);
  a.max_seqlen = static_cast<int32_t>(longest);
  a.eps = static_cast<float>(wl_float(w, "eps", 1e-6));
  a.gelu = w.contains("approximate") ? wl_gelu_approx(w, kOp) : GeluApprox::tanh;
  c.bind(layout);
  return c;
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "vlm";
  d.level = "L3";
  d.summary = "one block of Qwen3-VL's vision tower: LayerNorm, QKV, 2-D rotary embedding, attention within each "
              "image frame, proj and residual add, LayerNorm, GELU-tanh MLP and residual add, over packed patches";
  d.args_size = sizeof(A);
  d.tensor_args = {
      {"hidden", ArgRole::inout, offsetof(A, hidden)},
      {"norm1", ArgRole::in, offsetof(A, norm1)},
      {"norm1_bias", ArgRole::in, offsetof(A, norm1_bias)},
      {"qkv_weight", ArgRole::in, offsetof(A, qkv_weight)},
      {"qkv_bias", ArgRole::in, offsetof(A, qkv_bias)},
      {"proj_weight", ArgRole::in, offsetof(A, proj_weight)},
      {"proj_bias", ArgRole::in, offsetof(A, proj_bias)},
      {"norm2", ArgRole::in, offsetof(A, norm2)},
      {"norm2_bias", ArgRole::in, offsetof(A, norm2_bias)},
      {"fc1_weight", ArgRole::in, offsetof(A, fc1_weight)},
      {"fc1_bias", ArgRole::in, offsetof(A, fc1_bias)},
      {"fc2_weight", ArgRole::in, offsetof(A, fc2_weight)},
      {"fc2_bias", ArgRole::in, offsetof(A, fc2_bias)},
      {"positions", ArgRole::in, offsetof(A, positions)},
      {"cos_sin_cache", ArgRole::in, offsetof(A, cos_sin_cache)},
      {"cu_seqlens", ArgRole::in, offsetof(A, cu_seqlens)},
      {"cu_seqlens_host", ArgRole::in, offsetof(A, cu_seqlens_host), /*host_only=*/true},
      {"normed", ArgRole::workspace, offsetof(A, normed)},
      {"qkv", ArgRole::workspace, offsetof(A, qkv)},
      {"attn_out", ArgRole::workspace, offsetof(A, attn_out)},
      {"sub", ArgRole::workspace, offsetof(A, sub)},
      {"inter", ArgRole::workspace, offsetof(A, inter)},
      {"act", ArgRole::workspace, offsetof(A, act)},
  };
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    return packed_transformer_layer_cost(a.hidden, a.cu_seqlens_host, a.fc1_weight.shape[0], a.qkv_weight);
  };
  // hidden + attention + MLP, not normalised: the composed baseline rounds every
  // intermediate to the dtype where the oracle keeps f64 (but q, k, v and the sum between
  // the halves), a few units in the last place of outputs of order one to four.
  d.tolerance = [](const OpCase& c, const TensorArg&, DType) {
    const double ulp = half_rounding_unit(c.as<A>().qkv_weight.dtype);
    return Tolerance{16 * ulp, 16 * ulp};
  };
  d.workload_from_call = workload_from_call;
  d.covers = {"layer_norm", "linear", "rotary_embedding", "varlen_attention", "add", "gelu"};
  d.composed[0] = qwen3_vl_vision_block_composed_cpu;
  d.composed[1] = qwen3_vl_vision_block_composed_cuda;
  d.architectures = {"qwen3_vl"};
  // Frames of different grids packed together (4 x 4, 4 x 6, 2 x 2 patches, ...), heads of 72
  // as Qwen3-VL's, f16 and bf16, an empty frame.
  d.test_workloads = {
      {{"hidden", 144}, {"heads", 2}, {"intermediate", 160}, {"seq_lens", {16, 24, 4}}, {"dtype", "bf16"}},
      {{"hidden", 144}, {"heads", 2}, {"intermediate", 160}, {"seq_lens", {36, 8}}, {"dtype", "f16"}},
      {{"hidden", 64}, {"heads", 2}, {"intermediate", 96}, {"seq_lens", {48}}, {"dtype", "f16"},
       {"approximate", "none"}},
      {{"hidden", 64}, {"heads", 1}, {"intermediate", 128}, {"seq_lens", {0, 12, 0}}, {"dtype", "bf16"},
       {"eps", 1e-5}},
  };
  // Qwen3-VL-8B's vision tower (hidden 1152, 16 heads of 72, intermediate 4304): one
  // 1024 x 1024 image (a 64 x 64 grid, 4096 patches) and four 448 x 448 images (28 x 28,
  // 784 patches each).
  d.bench_workloads = {
      {{"hidden", 1152}, {"heads", 16}, {"intermediate", 4304}, {"seq_lens", {4096}}},
      {{"hidden", 1152}, {"heads", 16}, {"intermediate", 4304}, {"seq_lens", {784, 784, 784, 784}}},
  };
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("qwen3_vl_vision_block", cpu, qwen3_vl_vision_block_cpu);

}  // namespace

fk_status qwen3_vl_vision_block_composed_cpu(const void* args, void* stream) {
  return composed<DeviceType::cpu>(args, stream);
}
fk_status qwen3_vl_vision_block_composed_cuda(const void* args, void* stream) {
  return composed<DeviceType::cuda>(args, stream);
}

}  // namespace fk::ops
