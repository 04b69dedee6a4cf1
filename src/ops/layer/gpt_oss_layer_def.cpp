// gpt_oss_layer: definition (workloads, case, cost, tolerance, output check, capture) and
// the CPU registration. The baseline on either backend is the registry calls of the parts
// (gpt_oss_layer_composed.cpp); the CPU baseline runs the reference
// (gpt_oss_layer_reference.cpp) instead when it is the oracle (f64 outputs).
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "fk/element.h"
#include "fk/ops/gpt_oss_layer.h"
#include "fk/ops/moe_swigluoai.h"
#include "fk/rope_cache.h"
#include "ops/attention/attention_case.h"
#include "ops/common/case_builder.h"
#include "ops/layer/gpt_oss_layer_check.h"
#include "ops/layer/gpt_oss_layer_composed.h"
#include "ops/layer/gpt_oss_layer_reference.h"
#include "ops/layer/layer_reference_parts.h"
#include "ops/layer/paged_layer_case.h"
#include "ops/rope/rope_workload.h"

namespace fk::ops {
namespace {

using Args = GptOssLayerArgs;
constexpr const char* kOp = Args::kName;

fk_status gpt_oss_layer_cpu(const void* args, void* stream) {
  const auto& a = *static_cast<const Args*>(args);
  if (!is_oracle_call(a)) return gpt_oss_layer_composed_cpu(args, stream);
  return op_guard([&] { gpt_oss_layer_reference(a); });
}

// The layer's fields of a workload (defaults in brackets):
//   hidden, heads, kv_heads, experts, topk, inter   required (inter: the experts')
//   head_dim [64], rope_theta [150000], yarn_factor [0: plain rope; gpt-oss: 32],
//   yarn_original_max [4096]
//   qo_lens, kv_lens                          per sequence, as decoder_layer's
//   page_size [16], extra_pages [2], nan_past_end [false]   the cache (attention_case.h)
//   first_layer [false], dtype ["bf16"], eps [1e-5], sm_scale [1/sqrt(head_dim)],
//   window_left [-1] (gpt-oss's sliding layers: 127), cuda_graph [0], alpha [1.702], limit [7]
struct LayerWorkload {
  int64_t hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, experts = 0, topk = 0, inter = 0;
  bool first_layer = false;
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
  l.head_dim = wl_int(w, "head_dim", 64);
  FK_CHECK(l.hidden > 0 && l.heads > 0 && l.kv_heads > 0 && l.head_dim > 0 && l.inter > 0, kOp,
           " workload needs positive hidden, heads, kv_heads, head_dim and inter, got ", w.dump());
  FK_CHECK(l.heads % l.kv_heads == 0, kOp, " workload: heads (", l.heads, ") must be a multiple of kv_heads (",
           l.kv_heads, "), got ", w.dump());
  FK_CHECK(l.topk >= 1 && l.topk <= l.experts, kOp, " workload needs 1 <= topk <= experts, got ", w.dump());
  l.first_layer = wl_bool(w, "first_layer", false);
  l.batch = parse_layer_batch(kOp, w, l.heads, l.kv_heads, l.head_dim);
  return l;
}

RopeConfig rope_of(const Json& w) {
  RopeConfig rope;
  rope.theta = wl_float(w, "rope_theta", 150000.0);
  const double factor = wl_float(w, "yarn_factor", 0.0);
  if (factor > 0) {
    rope.scaling = RopeScalingType::yarn;
    rope.factor = factor;
    rope.original_max_position_embeddings = wl_float(w, "yarn_original_max", 4096.0);
  }
  return rope;
}

// Philox streams of the layer's own tensors (the cache and metadata use attention_case's).
enum : uint64_t {
  kHidden = 40, kResidual, kInputNorm, kQkv, kQkvBias, kSinks, kO, kOBias, kPostNorm, kRouter, kRouterBias, kW13,
  kW13Bias, kW2, kW2Bias
};

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

  OpCase c = begin_case<Args>(w, layout.size());
  c.tensors = joined<Tensor>({
      {
          random_tensor({T, H}, dt, seed, kHidden, -1.f, 1.f),
          random_tensor({T, H}, dt, seed, kResidual, -2.f, 2.f),
          random_tensor({H}, dt, seed, kInputNorm, 0.5f, 1.5f),
          projection({qkv_rows, H}, dt, seed, kQkv),
          random_tensor({qkv_rows}, dt, seed, kQkvBias, -0.5f, 0.5f),
          random_tensor({l.heads}, DType::f32, seed, kSinks, -2.f, 2.f),
          projection({H, l.heads * D}, dt, seed, kO),
          random_tensor({H}, dt, seed, kOBias, -0.5f, 0.5f),
          random_tensor({H}, dt, seed, kPostNorm, 0.5f, 1.5f),
          projection({E, H}, dt, seed, kRouter),
          random_tensor({E}, dt, seed, kRouterBias, -0.5f, 0.5f),
          projection({E, 2 * I, H}, dt, seed, kW13),
          random_tensor({E, 2 * I}, dt, seed, kW13Bias, -0.5f, 0.5f),
          projection({E, H, I}, dt, seed, kW2),
          random_tensor({E, H}, dt, seed, kW2Bias, -0.5f, 0.5f),
      },
      layer_paged_tensors(tokens, make_rope_cos_sin_cache(rope_of(w), tokens.max_kv, D), at),
      layer_stream_workspaces(T, H, qkv_rows, l.heads * D, dt),
      {
          Tensor::empty({T, l.heads}, DType::f32),
          Tensor::empty({T, E}, dt),
          Tensor::empty({T, k}, DType::f32),
          Tensor::empty({T, k}, DType::i32),
          Tensor::empty({fused_experts_swigluoai_workspace_bytes(T, k, I)}, DType::u8),
      },
      layer_attention_workspaces(at),
  });
  Args& a = c.as<Args>();
  a.num_heads = static_cast<int32_t>(l.heads);
  a.num_kv_heads = static_cast<int32_t>(l.kv_heads);
  a.head_dim = static_cast<int32_t>(D);
  a.rope_style = RopeStyle::neox;
  a.eps = static_cast<float>(wl_float(w, "eps", 1e-5));
  a.sm_scale = static_cast<float>(pw.sm_scale);
  a.window_left = static_cast<int32_t>(pw.window_left);
  a.first_layer = l.first_layer ? 1 : 0;
  a.cuda_graph = pw.cuda_graph;
  a.swiglu_alpha = static_cast<float>(wl_float(w, "alpha", kSwigluOaiAlpha));
  a.swiglu_limit = static_cast<float>(wl_float(w, "limit", kSwigluOaiLimit));
  c.bind(layout);
  return c;
}

// Minimal traffic: the attention weights and the router once, each expert a token selects
// once (the expected number of distinct experts of T tokens choosing k of E uniformly), the
// stream read and written, the K/V every query reads and this step's K/V written, the
// metadata. Flops: the projections, the k experts of every token, attention.
OpCost gpt_oss_layer_cost(const OpCase& c) {
  const auto& a = c.as<Args>();
  const attn::PagedWorkload pw = parse_layer_workload(c.workload).batch;
  const OpCost attention = attn::paged_attention_cost(pw);
  const double T = static_cast<double>(a.hidden.shape[0]), H = static_cast<double>(a.hidden.shape[1]);
  const double E = static_cast<double>(a.w13.shape[0]), I = static_cast<double>(a.w13.shape[1]) / 2,
               k = static_cast<double>(a.topk_ids.shape[1]);
  const double es = static_cast<double>(dtype_size(a.input_norm.dtype));
  double weights = 0;
  for (const TensorView* v : {&a.input_norm, &a.qkv_weight, &a.qkv_bias, &a.sinks, &a.o_weight, &a.o_bias,
                              &a.post_attention_norm, &a.router_weight, &a.router_bias})
    weights += static_cast<double>(v->nbytes());
  const double experts_hit = E * (1.0 - std::pow(1.0 - k / E, T));
  weights += experts_hit * (3.0 * H * I + 2.0 * I + H) * es;
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
  if (a.first_layer) w["first_layer"] = true;
  if (a.window_left >= 0) w["window_left"] = a.window_left;
  if (a.eps != 1e-5f) w["eps"] = a.eps;
  if (std::fabs(a.sm_scale * std::sqrt(static_cast<double>(a.head_dim)) - 1.0) > 1e-6) w["sm_scale"] = a.sm_scale;
  if (a.cuda_graph) w["cuda_graph"] = a.cuda_graph;
  if (a.swiglu_alpha != kSwigluOaiAlpha) w["alpha"] = a.swiglu_alpha;
  if (a.swiglu_limit != kSwigluOaiLimit) w["limit"] = a.swiglu_limit;
  return w;
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "layer";
  d.level = "L3";
  d.summary = "one gpt-oss decoder layer: norms, QKV with bias, rope, KV-cache write, paged attention with sinks "
              "(sliding or full), o with bias, router, top-k softmax, biased experts with the clamped SwiGLU";
  d.args_size = sizeof(Args);
  d.tensor_args = joined<TensorArg>({
      {
          {"hidden", ArgRole::inout, offsetof(Args, hidden)},
          {"residual", ArgRole::inout, offsetof(Args, residual)},
          {"input_norm", ArgRole::in, offsetof(Args, input_norm)},
          {"qkv_weight", ArgRole::in, offsetof(Args, qkv_weight)},
          {"qkv_bias", ArgRole::in, offsetof(Args, qkv_bias)},
          {"sinks", ArgRole::in, offsetof(Args, sinks)},
          {"o_weight", ArgRole::in, offsetof(Args, o_weight)},
          {"o_bias", ArgRole::in, offsetof(Args, o_bias)},
          {"post_attention_norm", ArgRole::in, offsetof(Args, post_attention_norm)},
          {"router_weight", ArgRole::in, offsetof(Args, router_weight)},
          {"router_bias", ArgRole::in, offsetof(Args, router_bias)},
          {"w13", ArgRole::in, offsetof(Args, w13)},
          {"w13_bias", ArgRole::in, offsetof(Args, w13_bias)},
          {"w2", ArgRole::in, offsetof(Args, w2)},
          {"w2_bias", ArgRole::in, offsetof(Args, w2_bias)},
      },
      layer_paged_args<Args>(),
      layer_stream_workspace_args<Args>(),
      {
          {"lse", ArgRole::workspace, offsetof(Args, lse)},
          {"router_logits", ArgRole::workspace, offsetof(Args, router_logits)},
          {"topk_weights", ArgRole::workspace, offsetof(Args, topk_weights)},
          {"topk_ids", ArgRole::workspace, offsetof(Args, topk_ids)},
          {"moe_workspace", ArgRole::workspace, offsetof(Args, moe_workspace)},
      },
      layer_attention_workspace_args<Args>(),
  });
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_layer_case(layout, w, seed); };
  d.cost = gpt_oss_layer_cost;
  d.tolerance = gpt_oss_layer_tolerance;
  d.check_outputs = check_gpt_oss_layer_outputs;
  d.workload_from_call = workload_from_call;
  d.covers = {"rms_norm_linear", "rms_norm", "fused_add_rms_norm", "linear", "rope_and_cache", "rotary_embedding",
              "reshape_and_cache", "batch_decode_paged_attention", "batch_prefill_paged_attention",
              "attention_sink_rescale", "moe_topk_softmax", "fused_experts_swigluoai"};
  d.composed[static_cast<int>(DeviceType::cpu)] = gpt_oss_layer_composed_cpu;
  d.composed[static_cast<int>(DeviceType::cuda)] = gpt_oss_layer_composed_cuda;
  d.architectures = {"gpt_oss"};

  using J = Json;
  auto layer = [](int64_t hidden, int64_t heads, int64_t kv_heads, int64_t experts, int64_t topk, int64_t inter,
                  const J& qo, const J& kv) {
    return J{{"hidden", hidden}, {"heads", heads}, {"kv_heads", kv_heads}, {"experts", experts}, {"topk", topk},
             {"inter", inter},   {"qo_lens", qo},  {"kv_lens", kv}};
  };
  // Head dim 64 (gpt-oss's; the CUDA attention kernels take 64, 128 and 256).
  J decode = layer(64, 4, 2, 8, 2, 32, {1, 1, 1}, {5, 17, 33});
  decode["page_size"] = 4;  // several pages a sequence
  J mixed = layer(128, 4, 1, 6, 4, 48, {1, 7, 12}, {9, 7, 20});
  mixed["page_size"] = 8;
  mixed["window_left"] = 5;  // a sliding layer
  J first = layer(64, 2, 2, 4, 2, 32, {10}, {10});
  first["first_layer"] = true;
  first["yarn_factor"] = 32.0;  // gpt-oss's YaRN
  first["yarn_original_max"] = 4.0;
  J f16 = layer(96, 3, 1, 5, 3, 40, {4, 1}, {20, 3});
  f16["dtype"] = "f16";
  f16["limit"] = 0.75;  // most gates and ups clamped
  J nan = layer(64, 2, 1, 4, 1, 16, {3}, {8});
  nan["page_size"] = 4;
  nan["nan_past_end"] = true;
  d.test_workloads = {decode, mixed, first, f16, nan, layer(64, 2, 1, 4, 2, 16, J::array(), J::array())};

  // gpt-oss-120b: hidden 2880, 64 query / 8 KV heads of 64, 128 experts top-4 of 2880, YaRN
  // x32, layers alternating a 128-token window and full attention; decode at batch 1 (4k
  // context, a full layer) and 32 (2k contexts, a sliding layer), a 2k prefill chunk after
  // 2k of context. gpt-oss-20b: 32 experts, decode at batch 1.
  auto model = [&](int64_t experts, const J& qo, const J& kv, bool sliding) {
    J w = layer(2880, 64, 8, experts, 4, 2880, qo, kv);
    w["yarn_factor"] = 32.0;
    if (sliding) w["window_left"] = 127;
    return w;
  };
  d.bench_workloads = {model(128, J{1}, J{4096}, false),
                       model(128, J(std::vector<int64_t>(32, 1)), J(std::vector<int64_t>(32, 2048)), true),
                       model(128, J{2048}, J{4096}, false), model(32, J{1}, J{4096}, false)};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("gpt_oss_layer", cpu, gpt_oss_layer_cpu);

}  // namespace
}  // namespace fk::ops
