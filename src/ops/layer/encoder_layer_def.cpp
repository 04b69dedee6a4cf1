// encoder_layer: definition (workloads, case, cost, tolerance), validation, the composed
// baseline (its parts through the registry) and the CPU reference in double (the oracle,
// when hidden is f64), in the order of fk/ops/layer.h.
#include <cmath>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/runtime.h"
#include "fk/ops/elementwise.h"
#include "fk/ops/layer.h"
#include "fk/ops/linear.h"
#include "fk/ops/norm.h"
#include "fk/ops/varlen_attention.h"
#include "ops/activation/activation_defs.h"
#include "ops/activation/activation_reference.h"
#include "ops/common/case_builder.h"
#include "ops/common/layer_cost.h"
#include "ops/common/packed_validate.h"
#include "ops/common/validate.h"
#include "ops/common/views.h"
#include "ops/layer/encoder_layer_composed.h"
#include "ops/linear/linear_reference.h"
#include "ops/norm/norm_reference.h"

namespace fk::ops {
namespace {

using A = EncoderLayerArgs;
constexpr const char* kOp = A::kName;

struct Shape {
  int64_t tokens, hidden, inter, heads, head_dim, seqs;
};

Shape validate(const A& a, DeviceType backend) {
  FK_CHECK(a.hidden.rank == 2, kOp, ": hidden must be [tokens, hidden], got ", describe(a.hidden));
  const DType dt = a.qkv_weight.dtype;
  FK_CHECK(dt == DType::f16 || dt == DType::bf16, kOp, ": the weights must be f16 or bf16, got ", describe(a.qkv_weight));
  expect_written_dtype(kOp, "hidden", a.hidden, dt, backend);
  expect_contiguous(kOp, "hidden", a.hidden);
  Shape s{a.hidden.shape[0], a.hidden.shape[1], a.up_weight.rank == 2 ? a.up_weight.shape[0] : -1, a.num_heads, 0, 0};
  FK_CHECK(s.heads > 0 && s.hidden % s.heads == 0, kOp, ": num_heads ", s.heads, " must divide the hidden size ",
           s.hidden);
  s.head_dim = s.hidden / s.heads;
  expect_packed_matrix(kOp, "qkv_weight", a.qkv_weight, 3 * s.hidden, s.hidden, dt);
  expect_packed_vector(kOp, "qkv_bias", a.qkv_bias, 3 * s.hidden, dt);
  expect_packed_matrix(kOp, "o_weight", a.o_weight, s.hidden, s.hidden, dt);
  for (const auto& [name, v] : {std::pair<const char*, const TensorView*>{"o_bias", &a.o_bias},
                                {"attn_norm", &a.attn_norm}, {"attn_norm_bias", &a.attn_norm_bias},
                                {"down_bias", &a.down_bias}, {"out_norm", &a.out_norm},
                                {"out_norm_bias", &a.out_norm_bias}})
    expect_packed_vector(kOp, name, *v, s.hidden, dt);
  FK_CHECK(s.inter > 0, kOp, ": up_weight must be [intermediate, ", s.hidden, "], got ", describe(a.up_weight));
  expect_packed_matrix(kOp, "up_weight", a.up_weight, s.inter, s.hidden, dt);
  expect_packed_vector(kOp, "up_bias", a.up_bias, s.inter, dt);
  expect_packed_matrix(kOp, "down_weight", a.down_weight, s.hidden, s.inter, dt);
  FK_CHECK(a.cu_seqlens.rank == 1 && a.cu_seqlens.shape[0] >= 2 && a.cu_seqlens_host.rank == 1 &&
               a.cu_seqlens_host.shape[0] == a.cu_seqlens.shape[0],
           kOp, ": cu_seqlens and cu_seqlens_host must be [sequences + 1] alike, got ", describe(a.cu_seqlens), " and ",
           describe(a.cu_seqlens_host));
  expect_dtype(kOp, "cu_seqlens", a.cu_seqlens, DType::i32);
  expect_dtype(kOp, "cu_seqlens_host", a.cu_seqlens_host, DType::i32);
  s.seqs = a.cu_seqlens.shape[0] - 1;
  int64_t longest = 0;
  for (int64_t b = 0; b < s.seqs; ++b) {
    const int64_t lo = get_index(a.cu_seqlens_host, b), hi = get_index(a.cu_seqlens_host, b + 1);
    FK_CHECK(lo <= hi, kOp, ": cu_seqlens_host must not decrease (", lo, " then ", hi, ")");
    longest = std::max(longest, hi - lo);
  }
  FK_CHECK(get_index(a.cu_seqlens_host, 0) == 0 && get_index(a.cu_seqlens_host, s.seqs) == s.tokens, kOp,
           ": cu_seqlens_host must run from 0 to the ", s.tokens, " tokens of hidden");
  FK_CHECK(a.max_seqlen >= longest, kOp, ": max_seqlen ", a.max_seqlen, " is below the longest sequence (", longest,
           " tokens)");
  expect_packed_matrix(kOp, "qkv", a.qkv, s.tokens, 3 * s.hidden, dt);
  expect_packed_matrix(kOp, "attn_out", a.attn_out, s.tokens, s.hidden, dt);
  expect_packed_matrix(kOp, "sub", a.sub, s.tokens, s.hidden, dt);
  expect_packed_matrix(kOp, "inter", a.inter, s.tokens, s.inter, dt);
  expect_packed_matrix(kOp, "act", a.act, s.tokens, s.inter, dt);
  FK_CHECK(a.eps > 0, kOp, ": eps must be positive, got ", a.eps);
  return s;
}

// [T, heads, D] views of the qkv workspace's q, k or v columns, and of attn_out.
TensorView heads_of(const TensorView& m, int64_t col, const Shape& s) {
  return views::heads(views::block(m, 0, s.tokens, col, s.hidden), s.heads, s.head_dim);
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
  v.seqused_k = a.seqused_k;
  return v;
}

template <DeviceType B>
fk_status composed(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    const Shape s = validate(a, B);
    if (s.tokens == 0) return;
    const TensorView none{};
    call_op(LinearArgs{a.qkv, a.hidden, a.qkv_weight, a.qkv_bias, none, none}, B, stream);
    call_op(attention(a, s, heads_of(a.attn_out, 0, s)), B, stream);
    call_op(LinearArgs{a.sub, a.attn_out, a.o_weight, a.o_bias, none, none}, B, stream);
    call_op(AddLayerNormArgs{a.hidden, a.sub, a.hidden, a.attn_norm, a.attn_norm_bias, a.eps}, B, stream);
    call_op(LinearArgs{a.inter, a.hidden, a.up_weight, a.up_bias, none, none}, B, stream);
    call_op(GeluArgs{a.act, a.inter, a.gelu}, B, stream);
    call_op(LinearArgs{a.sub, a.act, a.down_weight, a.down_bias, none, none}, B, stream);
    call_op(AddLayerNormArgs{a.hidden, a.sub, a.hidden, a.out_norm, a.out_norm_bias, a.eps}, B, stream);
  });
}

// The oracle: hidden is f64; the intermediates are f64 but for q, k, v (the qkv workspace,
// in the dtype) and the hidden state between the halves (rounded to the dtype).
void reference(const A& a) {
  const Shape s = validate(a, DeviceType::cpu);
  if (s.tokens == 0) return;
  const DType dt = a.qkv_weight.dtype;
  const TensorView none{};
  auto f64 = [](int64_t r, int64_t c) { return Tensor::empty({r, c}, DType::f64); };
  Tensor attn = f64(s.tokens, s.hidden), sub = f64(s.tokens, s.hidden), inter = f64(s.tokens, s.inter),
         act = f64(s.tokens, s.inter);
  linear_reference(LinearArgs{a.qkv, a.hidden, a.qkv_weight, a.qkv_bias, none, none});
  const VarlenAttentionArgs va = attention(a, s, heads_of(attn.view(), 0, s));
  // varlen_attention's CPU baseline is its double-precision reference (never a candidate).
  const fk_op_fn attention_reference = OpRegistry::global().baseline(VarlenAttentionArgs::kName, DeviceType::cpu);
  FK_CHECK(attention_reference != nullptr && attention_reference(&va, nullptr) == FK_OK, kOp,
           ": the attention reference failed: ", last_error_message());
  linear_reference(LinearArgs{sub.view(), attn.view(), a.o_weight, a.o_bias, none, none});
  layer_norm_reference(a.hidden, sub.view(), a.attn_norm, &a.attn_norm_bias, a.eps, &a.hidden);
  for (int64_t t = 0; t < s.tokens; ++t)
    for (int64_t h = 0; h < s.hidden; ++h) set(a.hidden, round_to_dtype(get(a.hidden, t, h), dt), t, h);
  linear_reference(LinearArgs{inter.view(), a.hidden, a.up_weight, a.up_bias, none, none});
  elementwise_reference(act.view(), inter.view(), [g = a.gelu](double x) { return gelu_ref(x, g); });
  linear_reference(LinearArgs{sub.view(), act.view(), a.down_weight, a.down_bias, none, none});
  layer_norm_reference(a.hidden, sub.view(), a.out_norm, &a.out_norm_bias, a.eps, &a.hidden);
}

fk_status encoder_layer_cpu(const void* args, void* stream) {
  const auto& a = *static_cast<const A*>(args);
  if (a.hidden.dtype != DType::f64) return encoder_layer_composed_cpu(args, stream);
  return op_guard([&] { reference(a); });
}

// The workload of a captured call.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  Json lens = Json::array();
  for (int64_t b = 0; b + 1 < a.cu_seqlens_host.shape[0]; ++b)
    lens.push_back(get_index(a.cu_seqlens_host, b + 1) - get_index(a.cu_seqlens_host, b));
  Json w{{"hidden", a.hidden.shape[1]},   {"heads", a.num_heads},
         {"intermediate", a.up_weight.shape[0]}, {"seq_lens", lens},
         {"dtype", std::string(dtype_name(a.qkv_weight.dtype))}, {"eps", a.eps}};
  if (a.gelu == GeluApprox::tanh) w["approximate"] = "tanh";
  if (a.seqused_k.data != nullptr) {
    std::vector<int32_t> used(static_cast<size_t>(a.seqused_k.shape[0]));
    rt::memcpy_sync(used.data(), Device::cpu(), a.seqused_k.data, a.seqused_k.device, used.size() * sizeof(int32_t));
    w["key_lens"] = used;
  }
  return w;
}

// Workload fields: hidden, heads, intermediate, seq_lens (required); dtype [f16], eps [1e-5],
// approximate ["none"], key_lens (the seqused_k argument; default none).
OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const int64_t H = wl_int(w, "hidden"), heads = wl_int(w, "heads"), I = wl_int(w, "intermediate");
  FK_CHECK(H > 0 && heads > 0 && H % heads == 0 && I > 0, kOp,
           " workload needs hidden, heads dividing it and intermediate, all positive; got ", w.dump());
  FK_CHECK(w.contains("seq_lens") && w["seq_lens"].is_array() && !w["seq_lens"].empty(), kOp,
           " workload needs seq_lens, a non-empty list; got ", w.dump());
  const DType dt = w.contains("dtype") ? wl_dtype(w) : DType::f16;
  const auto lens = w["seq_lens"].get<std::vector<int64_t>>();
  OpCase c = begin_case<A>(w, 21);
  Tensor cu = Tensor::empty({static_cast<int64_t>(lens.size()) + 1}, DType::i32);
  int64_t T = 0, longest = 0;
  cu.data_as<int32_t>()[0] = 0;
  for (size_t b = 0; b < lens.size(); ++b) {
    FK_CHECK(lens[b] >= 0, kOp, " workload: seq_lens[", b, "] is negative");
    T += lens[b];
    longest = std::max(longest, lens[b]);
    cu.data_as<int32_t>()[b + 1] = static_cast<int32_t>(T);
  }
  // Weights scaled by 1/sqrt(fan-in) (activations of order one through the layer); norms
  // around one; hidden as a LayerNorm output.
  const auto weight = [&](int64_t rows, int64_t cols, uint64_t stream) {
    const float r = static_cast<float>(std::sqrt(3.0 / static_cast<double>(cols)));
    return random_tensor({rows, cols}, dt, seed, stream, -r, r);
  };
  c.tensors[0] = random_tensor({T, H}, dt, seed, 1, -2.f, 2.f);
  c.tensors[1] = weight(3 * H, H, 2);
  c.tensors[2] = random_tensor({3 * H}, dt, seed, 3, -0.2f, 0.2f);
  c.tensors[3] = weight(H, H, 4);
  c.tensors[4] = random_tensor({H}, dt, seed, 5, -0.2f, 0.2f);
  c.tensors[5] = random_tensor({H}, dt, seed, 6, 0.5f, 1.5f);
  c.tensors[6] = random_tensor({H}, dt, seed, 7, -0.2f, 0.2f);
  c.tensors[7] = weight(I, H, 8);
  c.tensors[8] = random_tensor({I}, dt, seed, 9, -0.2f, 0.2f);
  c.tensors[9] = weight(H, I, 10);
  c.tensors[10] = random_tensor({H}, dt, seed, 11, -0.2f, 0.2f);
  c.tensors[11] = random_tensor({H}, dt, seed, 12, 0.5f, 1.5f);
  c.tensors[12] = random_tensor({H}, dt, seed, 13, -0.2f, 0.2f);
  c.tensors[13] = cu;
  c.tensors[14] = cu.clone();
  c.tensors[15] = Tensor::empty({T, 3 * H}, dt);
  c.tensors[16] = Tensor::empty({T, H}, dt);
  c.tensors[17] = Tensor::empty({T, H}, dt);
  c.tensors[18] = Tensor::empty({T, I}, dt);
  c.tensors[19] = Tensor::empty({T, I}, dt);
  if (w.contains("key_lens")) {
    const auto used = w["key_lens"].get<std::vector<int64_t>>();
    FK_CHECK(used.size() == lens.size(), kOp, " workload: key_lens must have one count per sequence; got ", w.dump());
    c.tensors[20] = Tensor::empty({static_cast<int64_t>(used.size())}, DType::i32);
    for (size_t b = 0; b < used.size(); ++b) c.tensors[20].data_as<int32_t>()[b] = static_cast<int32_t>(used[b]);
  }
  A& a = c.as<A>();
  a.num_heads = static_cast<int32_t>(heads);
  a.max_seqlen = static_cast<int32_t>(longest);
  a.eps = static_cast<float>(wl_float(w, "eps", 1e-5));
  a.gelu = wl_gelu_approx(w, kOp);
  c.bind(layout);
  return c;
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "layer";
  d.level = "L3";
  d.summary = "one post-norm encoder layer (BERT / XLM-RoBERTa): QKV, bidirectional varlen attention, o, "
              "add + LayerNorm, GELU MLP, add + LayerNorm, over packed sequences";
  d.args_size = sizeof(A);
  d.tensor_args = {
      {"hidden", ArgRole::inout, offsetof(A, hidden)},
      {"qkv_weight", ArgRole::in, offsetof(A, qkv_weight)},
      {"qkv_bias", ArgRole::in, offsetof(A, qkv_bias)},
      {"o_weight", ArgRole::in, offsetof(A, o_weight)},
      {"o_bias", ArgRole::in, offsetof(A, o_bias)},
      {"attn_norm", ArgRole::in, offsetof(A, attn_norm)},
      {"attn_norm_bias", ArgRole::in, offsetof(A, attn_norm_bias)},
      {"up_weight", ArgRole::in, offsetof(A, up_weight)},
      {"up_bias", ArgRole::in, offsetof(A, up_bias)},
      {"down_weight", ArgRole::in, offsetof(A, down_weight)},
      {"down_bias", ArgRole::in, offsetof(A, down_bias)},
      {"out_norm", ArgRole::in, offsetof(A, out_norm)},
      {"out_norm_bias", ArgRole::in, offsetof(A, out_norm_bias)},
      {"cu_seqlens", ArgRole::in, offsetof(A, cu_seqlens)},
      {"cu_seqlens_host", ArgRole::in, offsetof(A, cu_seqlens_host), /*host_only=*/true},
      {"qkv", ArgRole::workspace, offsetof(A, qkv)},
      {"attn_out", ArgRole::workspace, offsetof(A, attn_out)},
      {"sub", ArgRole::workspace, offsetof(A, sub)},
      {"inter", ArgRole::workspace, offsetof(A, inter)},
      {"act", ArgRole::workspace, offsetof(A, act)},
      {"seqused_k", ArgRole::in, offsetof(A, seqused_k)},
  };
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    return packed_transformer_layer_cost(a.hidden, a.cu_seqlens_host, a.up_weight.shape[0], a.qkv_weight);
  };
  // The output is a LayerNorm's: of order one whatever the layer's scale. The composed
  // baseline rounds each intermediate to the dtype where the oracle keeps f64: a few units
  // in the last place of the dtype, through the norms' division by the rows' spread.
  d.tolerance = [](const OpCase& c, const TensorArg&, DType) {
    const double ulp = half_rounding_unit(c.as<A>().qkv_weight.dtype);
    return Tolerance{16 * ulp, 16 * ulp};
  };
  d.workload_from_call = workload_from_call;
  d.covers = {"linear", "varlen_attention", "add_layer_norm", "gelu"};
  d.composed[0] = encoder_layer_composed_cpu;
  d.composed[1] = encoder_layer_composed_cuda;
  d.architectures = {"xlm_roberta", "bert"};
  d.test_workloads = {
      {{"hidden", 64}, {"heads", 2}, {"intermediate", 128}, {"seq_lens", {5, 1, 17}}},
      {{"hidden", 64}, {"heads", 1}, {"intermediate", 96}, {"seq_lens", {33}}, {"dtype", "bf16"}},
      {{"hidden", 128}, {"heads", 2}, {"intermediate", 256}, {"seq_lens", {3, 40, 2}}, {"approximate", "tanh"}},
      {{"hidden", 64}, {"heads", 2}, {"intermediate", 128}, {"seq_lens", {0, 4, 0}}, {"eps", 1e-12}},
      {{"hidden", 64}, {"heads", 2}, {"intermediate", 128}, {"seq_lens", {8, 8, 8}}, {"key_lens", {3, 8, 0}}},
  };
  // BGE-M3 (XLM-R large): a 32 x 512 indexing batch, one 512-token passage, mixed queries.
  d.bench_workloads = {
      {{"hidden", 1024}, {"heads", 16}, {"intermediate", 4096}, {"seq_lens", std::vector<int64_t>(32, 512)}},
      {{"hidden", 1024}, {"heads", 16}, {"intermediate", 4096}, {"seq_lens", {512}}},
      {{"hidden", 1024}, {"heads", 16}, {"intermediate", 4096},
       {"seq_lens", {16, 48, 31, 64, 20, 12, 90, 33, 8, 57, 44, 26, 71, 15, 39, 22}}},
      // ColBERTv2 (BERT-base): a batch of 32 passages at its 180-token doc_maxlen, and 32
      // queries of 32 tokens whose [MASK] padding is no key.
      {{"hidden", 768}, {"heads", 12}, {"intermediate", 3072}, {"seq_lens", std::vector<int64_t>(32, 180)},
       {"eps", 1e-12}},
      {{"hidden", 768}, {"heads", 12}, {"intermediate", 3072}, {"seq_lens", std::vector<int64_t>(32, 32)},
       {"key_lens", {9, 12, 7, 15, 10, 8, 11, 13, 9, 14, 6, 10, 12, 9, 16, 11,
                     8, 10, 13, 7, 12, 9, 11, 10, 14, 8, 9, 12, 10, 11, 13, 9}},
       {"eps", 1e-12}},
  };
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("encoder_layer", cpu, encoder_layer_cpu);

}  // namespace

fk_status encoder_layer_composed_cpu(const void* args, void* stream) {
  return composed<DeviceType::cpu>(args, stream);
}
fk_status encoder_layer_composed_cuda(const void* args, void* stream) {
  return composed<DeviceType::cuda>(args, stream);
}

}  // namespace fk::ops
