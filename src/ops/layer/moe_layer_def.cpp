// moe_layer: definition (workloads, case, cost, tolerance, output check, capture) and the
// CPU registration. The baseline on either backend is the registry calls of the parts
// (moe_layer_composed.cpp); the CPU baseline runs the reference (moe_layer_reference.cpp)
// instead when it is the oracle (f64 outputs).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>

#include "fk/element.h"
#include "fk/ops/moe.h"
#include "fk/ops/moe_layer.h"
#include "fk/rope_cache.h"
#include "ops/attention/attention_case.h"
#include "ops/common/case_builder.h"
#include "ops/common/layer_cost.h"
#include "ops/layer/moe_layer_composed.h"
#include "ops/layer/moe_layer_reference.h"
#include "ops/layer/moe_layer_routing.h"
#include "ops/layer/layer_reference_parts.h"
#include "ops/layer/paged_layer_case.h"
#include "ops/rope/rope_workload.h"

namespace fk::ops {
namespace {

using Args = MoeLayerArgs;
constexpr const char* kOp = Args::kName;

fk_status moe_layer_cpu(const void* args, void* stream) {
  const auto& a = *static_cast<const Args*>(args);
  if (!is_oracle_call(a)) return moe_layer_composed_cpu(args, stream);
  return op_guard([&] { moe_layer_reference(a); });
}

// The layer's fields of a workload (defaults in brackets):
//   hidden, heads, kv_heads, experts, topk, inter   required (inter: the experts')
//   head_dim [128], rope_theta [1e6], qk_norm [false] (Qwen3-MoE), qkv_bias [false],
//   renormalize [true] (OLMoE: false)
//   qo_lens, kv_lens                          per sequence, as decoder_layer's
//   page_size [16], extra_pages [2], nan_past_end [false]   the cache (attention_case.h)
//   first_layer [false], dtype ["bf16"], eps [1e-6], sm_scale [1/sqrt(head_dim)],
//   window_left [-1], cuda_graph [0]
struct LayerWorkload {
  int64_t hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, experts = 0, topk = 0, inter = 0;
  bool qk_norm = false, qkv_bias = false, renormalize = true, first_layer = false;
  attn::PagedWorkload batch;
};

LayerWorkload parse_layer_workload(const Json& w) {
  LayerWorkload l;
  l.hidden = wl_int(w, "hidden");
  l.heads = wl_int(w, "heads");
  l.kv_heads = wl_int(w, "kv_heads");
  l.experts = wl_int(w, "experts");
  l.topk = wl_int(w, "topk");
  l.inter = wl_int(w, "inter");
  l.head_dim = wl_int(w, "head_dim", 128);
  FK_CHECK(l.hidden > 0 && l.heads > 0 && l.kv_heads > 0 && l.head_dim > 0 && l.inter > 0, kOp,
           " workload needs positive hidden, heads, kv_heads, head_dim and inter, got ", w.dump());
  FK_CHECK(l.heads % l.kv_heads == 0, kOp, " workload: heads (", l.heads, ") must be a multiple of kv_heads (",
           l.kv_heads, "), got ", w.dump());
  FK_CHECK(l.topk >= 1 && l.topk <= l.experts, kOp, " workload needs 1 <= topk <= experts, got ", w.dump());
  l.qk_norm = wl_bool(w, "qk_norm", false);
  l.qkv_bias = wl_bool(w, "qkv_bias", false);
  l.renormalize = wl_bool(w, "renormalize", true);
  l.first_layer = wl_bool(w, "first_layer", false);
  l.batch = parse_layer_batch(kOp, w, l.heads, l.kv_heads, l.head_dim);
  FK_CHECK(l.batch.soft_cap == 0, kOp, " has no logit soft-cap");
  return l;
}

// Philox streams of the layer's own tensors (the cache and metadata use attention_case's).
enum : uint64_t { kHidden = 40, kResidual, kInputNorm, kQkv, kQkvBias, kQNorm, kKNorm, kO, kPostNorm, kRouter, kW13, kW2 };

// Uniform in [-a, a) with a = sqrt(3 / fan_in): rms 1/sqrt(fan_in), so each projection of
// unit-rms rows gives unit-rms rows.
Tensor projection(std::vector<int64_t> shape, DType dt, uint64_t seed, uint64_t stream) {
  const float a = static_cast<float>(std::sqrt(3.0 / static_cast<double>(shape.back())));
  return random_tensor(shape, dt, seed, stream, -a, a);
}

OpCase make_layer_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const LayerWorkload l = parse_layer_workload(w);
  const attn::PagedWorkload& pw = l.batch;
  const DType dt = pw.dtype;
  const int64_t T = pw.num_q_tokens(), H = l.hidden, D = l.head_dim, E = l.experts, I = l.inter, k = l.topk;
  const int64_t qkv_rows = (l.heads + 2 * l.kv_heads) * D;
  attn::PagedCaseTensors at = attn::make_paged_tensors(pw, seed);
  const LayerTokens tokens = layer_tokens(pw, at);
  RopeConfig rope;
  rope.theta = wl_float(w, "rope_theta", 1e6);

  OpCase c = begin_case<Args>(w, layout.size());
  c.tensors = joined<Tensor>({
      {
          random_tensor({T, H}, dt, seed, kHidden, -1.f, 1.f),
          random_tensor({T, H}, dt, seed, kResidual, -2.f, 2.f),
          random_tensor({H}, dt, seed, kInputNorm, 0.5f, 1.5f),
          projection({qkv_rows, H}, dt, seed, kQkv),
          l.qkv_bias ? random_tensor({qkv_rows}, dt, seed, kQkvBias, -0.5f, 0.5f) : absent_tensor(dt),
          l.qk_norm ? random_tensor({D}, dt, seed, kQNorm, 0.5f, 1.5f) : absent_tensor(dt),
          l.qk_norm ? random_tensor({D}, dt, seed, kKNorm, 0.5f, 1.5f) : absent_tensor(dt),
          projection({H, l.heads * D}, dt, seed, kO),
          random_tensor({H}, dt, seed, kPostNorm, 0.5f, 1.5f),
          projection({E, H}, dt, seed, kRouter),
          projection({E, 2 * I, H}, dt, seed, kW13),
          projection({E, H, I}, dt, seed, kW2),
      },
      layer_paged_tensors(tokens, make_rope_cos_sin_cache(rope, tokens.max_kv, D), at),
      layer_stream_workspaces(T, H, qkv_rows, l.heads * D, dt),
      {
          Tensor::empty({T, E}, dt),
          Tensor::empty({T, k}, DType::f32),
          Tensor::empty({T, k}, DType::i32),
          Tensor::empty({fused_experts_workspace_bytes(T, k, E, H, I)}, DType::u8),
      },
      layer_attention_workspaces(at),
  });
  Args& a = c.as<Args>();
  a.num_heads = static_cast<int32_t>(l.heads);
  a.num_kv_heads = static_cast<int32_t>(l.kv_heads);
  a.head_dim = static_cast<int32_t>(D);
  a.rope_style = RopeStyle::neox;
  a.eps = static_cast<float>(wl_float(w, "eps", 1e-6));
  a.sm_scale = static_cast<float>(pw.sm_scale);
  a.window_left = static_cast<int32_t>(pw.window_left);
  a.first_layer = l.first_layer ? 1 : 0;
  a.cuda_graph = pw.cuda_graph;
  a.renormalize = l.renormalize ? 1 : 0;
  c.bind(layout);
  return c;
}

// Against the oracle (f64 intermediates) an implementation differs by its own roundings, as
// decoder_layer's (decoder_layer_def.cpp): each output gets the dtype's default tolerance
// plus 8 * half-ulp * the typical size of what writes it:
//   k_cache, v_cache: the rows of this step's k and v (the QKV projection of unit-rms rows
//             plus its bias, or with q/k norms rms(k_norm));
//   residual: o's projection of attention outputs no larger than the values;
//   hidden:   the experts' down projection of act = silu(g) * u, of rms at most that of the
//             w13 rows' (sqrt(H) * rms(post_attention_norm) * rms(w13)), the k weights
//             summing to at most 1.
Tolerance moe_layer_tolerance(const OpCase& c, const TensorArg& arg, DType dt) {
  Tolerance tol = default_tolerance(dt);
  const auto& a = c.as<Args>();
  const double u = half_rounding_unit(a.input_norm.dtype);
  double scale = 0;
  if (arg.name == "k_cache" || arg.name == "v_cache") {
    scale = std::max(std::sqrt(static_cast<double>(a.qkv_weight.shape[1])) * sampled_rms(a.input_norm) *
                             sampled_rms(a.qkv_weight) +
                         sampled_rms(a.qkv_bias),
                     sampled_rms(a.k_norm));
  } else if (arg.name == "residual") {
    scale = std::sqrt(static_cast<double>(a.o_weight.shape[1])) * sampled_rms(a.o_weight);
  } else if (arg.name == "hidden") {
    const double sigma =
        std::sqrt(static_cast<double>(a.w13.shape[2])) * sampled_rms(a.post_attention_norm) * sampled_rms(a.w13);
    scale = std::sqrt(static_cast<double>(a.w2.shape[2])) * sigma * sampled_rms(a.w2);
  }
  tol.atol += 8 * u * scale;
  return tol;
}

std::string check_moe_layer(const OpCase& host, const OpCase& oracle, const OpCase& actual) {
  return check_moe_layer_outputs<Args>(host, oracle, actual, moe_layer_tolerance, moe_layer_router(host.as<Args>()));
}

// Minimal traffic: the attention weights and the router once, each expert a token selects
// once (the expected number of distinct experts of T tokens choosing k of E uniformly), the
// stream read and written, the K/V every query reads and this step's K/V written, the
// metadata. Flops: the projections, the k experts of every token, attention.
OpCost moe_layer_cost(const OpCase& c) {
  const auto& a = c.as<Args>();
  const attn::PagedWorkload pw = parse_layer_workload(c.workload).batch;
  const OpCost attention = attn::paged_attention_cost(pw);
  const double T = static_cast<double>(a.hidden.shape[0]), H = static_cast<double>(a.hidden.shape[1]);
  const double E = static_cast<double>(a.w13.shape[0]), I = static_cast<double>(a.w13.shape[1]) / 2,
               k = static_cast<double>(a.topk_ids.shape[1]);
  const double es = static_cast<double>(dtype_size(a.input_norm.dtype));
  double weights = 0;
  for (const TensorView* v : {&a.input_norm, &a.qkv_weight, &a.qkv_bias, &a.q_norm, &a.k_norm, &a.o_weight,
                              &a.post_attention_norm, &a.router_weight})
    weights += static_cast<double>(v->nbytes());
  const double experts_hit = E * (1.0 - std::pow(1.0 - k / E, T));
  weights += experts_hit * 3.0 * H * I * es;
  const double gemm = 2.0 * T * static_cast<double>(a.qkv_weight.numel() + a.o_weight.numel() + a.router_weight.numel()) +
                      T * k * 6.0 * H * I;
  return OpCost{weights + paged_layer_bytes(a, pw), gemm + attention.flops, a.input_norm.dtype};
}

Json workload_from_call(const void* raw) {
  const auto& a = *static_cast<const Args*>(raw);
  Json w{{"hidden", a.hidden.shape[1]},
         {"heads", a.num_heads},
         {"kv_heads", a.num_kv_heads},
         {"head_dim", a.head_dim},
         {"experts", a.w13.shape[0]},
         {"topk", a.topk_ids.shape[1]},
         {"inter", a.w13.shape[1] / 2},
         {"dtype", std::string(dtype_name(a.input_norm.dtype))}};
  add_batch_of_call(a, w);
  if (a.q_norm.data != nullptr && a.q_norm.numel() > 0) w["qk_norm"] = true;
  if (a.qkv_bias.data != nullptr && a.qkv_bias.numel() > 0) w["qkv_bias"] = true;
  if (!a.renormalize) w["renormalize"] = false;
  if (a.first_layer) w["first_layer"] = true;
  if (a.window_left >= 0) w["window_left"] = a.window_left;
  if (a.eps != 1e-6f) w["eps"] = a.eps;
  if (std::fabs(a.sm_scale * std::sqrt(static_cast<double>(a.head_dim)) - 1.0) > 1e-6) w["sm_scale"] = a.sm_scale;
  if (a.cuda_graph) w["cuda_graph"] = a.cuda_graph;
  return w;
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "layer";
  d.level = "L3";
  d.summary = "one MoE decoder layer (Mixtral / Qwen3-MoE): norms, QKV, rope (q/k norms), KV-cache write, paged "
              "attention, o, router, top-k softmax, SwiGLU experts, residual adds";
  d.args_size = sizeof(Args);
  d.tensor_args = joined<TensorArg>({
      {
          {"hidden", ArgRole::inout, offsetof(Args, hidden)},
          {"residual", ArgRole::inout, offsetof(Args, residual)},
          {"input_norm", ArgRole::in, offsetof(Args, input_norm)},
          {"qkv_weight", ArgRole::in, offsetof(Args, qkv_weight)},
          {"qkv_bias", ArgRole::in, offsetof(Args, qkv_bias)},
          {"q_norm", ArgRole::in, offsetof(Args, q_norm)},
          {"k_norm", ArgRole::in, offsetof(Args, k_norm)},
          {"o_weight", ArgRole::in, offsetof(Args, o_weight)},
          {"post_attention_norm", ArgRole::in, offsetof(Args, post_attention_norm)},
          {"router_weight", ArgRole::in, offsetof(Args, router_weight)},
          {"w13", ArgRole::in, offsetof(Args, w13)},
          {"w2", ArgRole::in, offsetof(Args, w2)},
      },
      layer_paged_args<Args>(),
      layer_stream_workspace_args<Args>(),
      {
          {"router_logits", ArgRole::workspace, offsetof(Args, router_logits)},
          {"topk_weights", ArgRole::workspace, offsetof(Args, topk_weights)},
          {"topk_ids", ArgRole::workspace, offsetof(Args, topk_ids)},
          {"moe_workspace", ArgRole::workspace, offsetof(Args, moe_workspace)},
      },
      layer_attention_workspace_args<Args>(),
  });
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_layer_case(layout, w, seed); };
  d.cost = moe_layer_cost;
  d.tolerance = moe_layer_tolerance;
  d.check_outputs = check_moe_layer;
  d.workload_from_call = workload_from_call;
  // Every op whose candidate must reach the layer: those the composition calls, and the
  // parts of the fused ones among them (their own compositions call those).
  d.covers = {"rms_norm_linear", "rms_norm", "fused_add_rms_norm", "linear", "rope_and_cache", "rotary_embedding",
              "qk_norm_rope", "reshape_and_cache", "batch_decode_paged_attention", "batch_prefill_paged_attention",
              "fused_moe", "moe_topk_softmax", "fused_experts"};
  d.composed[static_cast<int>(DeviceType::cpu)] = moe_layer_composed_cpu;
  d.composed[static_cast<int>(DeviceType::cuda)] = moe_layer_composed_cuda;
  d.architectures = {"mixtral", "qwen3_moe"};

  using J = Json;
  auto layer = [](int64_t hidden, int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t experts, int64_t topk,
                  int64_t inter, const J& qo, const J& kv) {
    return J{{"hidden", hidden}, {"heads", heads}, {"kv_heads", kv_heads}, {"head_dim", head_dim},
             {"experts", experts}, {"topk", topk}, {"inter", inter},       {"qo_lens", qo},
             {"kv_lens", kv}};
  };
  // Head dims 64 and 128 (the CUDA attention kernels take 64, 128 and 256); H and I
  // multiples of 8 (fused_experts' CUDA baseline).
  J decode = layer(64, 4, 2, 64, 8, 2, 32, {1, 1, 1}, {5, 17, 33});
  decode["page_size"] = 4;  // several pages a sequence
  J mixed = layer(128, 4, 1, 64, 6, 4, 48, {1, 7, 12}, {9, 7, 20});
  mixed["page_size"] = 8;
  mixed["qk_norm"] = true;  // Qwen3-MoE
  J first = layer(64, 2, 2, 64, 4, 2, 32, {10}, {10});
  first["first_layer"] = true;
  J f16 = layer(96, 3, 1, 64, 5, 3, 40, {4, 1}, {20, 3});
  f16["dtype"] = "f16";
  f16["renormalize"] = false;  // OLMoE's weights
  f16["window_left"] = 6;      // Mixtral's sliding window, where configured
  f16["qkv_bias"] = true;
  J nan = layer(64, 2, 1, 64, 4, 1, 16, {3}, {8});
  nan["page_size"] = 4;
  nan["nan_past_end"] = true;
  J wide = layer(256, 2, 1, 128, 8, 2, 64, {1, 1}, {40, 70});
  wide["qk_norm"] = true;
  d.test_workloads = {decode, mixed, first, f16, nan, wide, layer(64, 2, 1, 64, 4, 2, 16, J::array(), J::array())};

  // Qwen3-30B-A3B: hidden 2048, 32 query / 4 KV heads of 128 with q/k norms, 128 experts
  // top-8 of 768; decode at batch 1 (4k context) and 32 (2k contexts), a 2k prefill chunk
  // after 2k of context. Mixtral-8x7B: hidden 4096, 32 / 8 heads of 128, 8 experts top-2
  // of 14336, decode at batch 1.
  auto qwen3 = [&](const J& qo, const J& kv) {
    J w = layer(2048, 32, 4, 128, 128, 8, 768, qo, kv);
    w["qk_norm"] = true;
    return w;
  };
  d.bench_workloads = {qwen3(J{1}, J{4096}),
                       qwen3(J(std::vector<int64_t>(32, 1)), J(std::vector<int64_t>(32, 2048))),
                       qwen3(J{2048}, J{4096}), layer(4096, 32, 8, 128, 8, 2, 14336, J{1}, J{4096})};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("moe_layer", cpu, moe_layer_cpu);

}  // namespace
}  // namespace fk::ops
