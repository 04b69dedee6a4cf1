// decoder_layer: definition (workloads, case, cost, tolerance, capture) and registrations.
// The baseline on either backend is the registry calls of the parts
// (decoder_layer_composed.cpp); the CPU baseline runs the reference
// (decoder_layer_reference.cpp) instead when it is the oracle (f64 outputs), which the
// parts' implementations do not take.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "fk/element.h"
#include "fk/ops/layer.h"
#include "fk/rope_cache.h"
#include "ops/attention/attention_case.h"
#include "ops/common/case_builder.h"
#include "ops/common/layer_cost.h"
#include "ops/layer/decoder_layer_composed.h"
#include "ops/layer/decoder_layer_reference.h"
#include "ops/layer/layer_reference_parts.h"
#include "ops/layer/paged_layer_case.h"
#include "ops/rope/rope_workload.h"

namespace fk::ops {
namespace {

using Args = DecoderLayerArgs;
constexpr const char* kOp = Args::kName;

fk_status decoder_layer_cpu(const void* args, void* stream) {
  const auto& a = *static_cast<const Args*>(args);
  if (!is_oracle_call(a)) return decoder_layer_composed_cpu(args, stream);
  return op_guard([&] { decoder_layer_reference(a); });
}

// The layer's fields of a workload (defaults in brackets):
//   hidden, heads, kv_heads, intermediate    required
//   head_dim [128], rot_dim [head_dim], style ["neox"], rope_theta [10000]
//   qo_lens, kv_lens                          per sequence: query tokens (the last qo_len of
//                                             its kv_len), as the attention ops' workloads
//   page_size [16], extra_pages [2], nan_past_end [false]   the cache (attention_case.h)
//   qk_norm [false] (Qwen3), qkv_bias [false] (Qwen2), first_layer [false]
//   dtype ["bf16"], eps [1e-6], sm_scale [1/sqrt(head_dim)], window_left [-1], cuda_graph [0]
struct LayerWorkload {
  int64_t hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0, rot_dim = 0;
  bool qk_norm = false, qkv_bias = false, first_layer = false;
  attn::PagedWorkload batch;
};

LayerWorkload parse_layer_workload(const Json& w) {
  LayerWorkload l;
  l.hidden = wl_int(w, "hidden");
  l.heads = wl_int(w, "heads");
  l.kv_heads = wl_int(w, "kv_heads");
  l.intermediate = wl_int(w, "intermediate");
  l.head_dim = wl_int(w, "head_dim", 128);
  l.rot_dim = wl_int(w, "rot_dim", l.head_dim);
  FK_CHECK(l.hidden > 0 && l.heads > 0 && l.kv_heads > 0 && l.intermediate > 0 && l.head_dim > 0, kOp,
           " workload needs positive hidden, heads, kv_heads, intermediate and head_dim, got ", w.dump());
  FK_CHECK(l.heads % l.kv_heads == 0, kOp, " workload: heads (", l.heads, ") must be a multiple of kv_heads (",
           l.kv_heads, "), got ", w.dump());
  FK_CHECK(l.rot_dim >= 2 && l.rot_dim % 2 == 0 && l.rot_dim <= l.head_dim, kOp,
           " workload: rot_dim must be even and in [2, head_dim], got ", w.dump());
  l.qk_norm = wl_bool(w, "qk_norm", false);
  l.qkv_bias = wl_bool(w, "qkv_bias", false);
  l.first_layer = wl_bool(w, "first_layer", false);
  l.batch = parse_layer_batch(kOp, w, l.heads, l.kv_heads, l.head_dim);
  FK_CHECK(l.batch.soft_cap == 0, kOp, " has no logit soft-cap");
  return l;
}

// Philox streams of the layer's own tensors (the cache and metadata use attention_case's).
enum : uint64_t {
  kHidden = 40, kResidual, kInputNorm, kQkv, kQkvBias, kQNorm, kKNorm, kO, kPostNorm, kGateUp, kDown
};

// Uniform weights in [-a, a) with a = sqrt(3 / fan_in): rms 1/sqrt(fan_in), so each
// projection of unit-rms rows gives unit-rms rows and the activations stay O(1).
Tensor projection(int64_t rows, int64_t fan_in, DType dt, uint64_t seed, uint64_t stream) {
  const float a = static_cast<float>(std::sqrt(3.0 / static_cast<double>(fan_in)));
  return random_tensor({rows, fan_in}, dt, seed, stream, -a, a);
}

OpCase make_layer_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const LayerWorkload l = parse_layer_workload(w);
  const attn::PagedWorkload& pw = l.batch;
  const DType dt = pw.dtype;
  const int64_t T = pw.num_q_tokens(), H = l.hidden, D = l.head_dim, I = l.intermediate;
  const int64_t qkv_rows = (l.heads + 2 * l.kv_heads) * D;
  attn::PagedCaseTensors at = attn::make_paged_tensors(pw, seed);

  const LayerTokens tokens = layer_tokens(pw, at);
  RopeConfig rope;
  rope.theta = wl_float(w, "rope_theta", 10000.0);

  OpCase c = begin_case<Args>(w, layout.size());
  c.tensors = joined<Tensor>({
      {
          random_tensor({T, H}, dt, seed, kHidden, -1.f, 1.f),
          random_tensor({T, H}, dt, seed, kResidual, -2.f, 2.f),
          random_tensor({H}, dt, seed, kInputNorm, 0.5f, 1.5f),
          projection(qkv_rows, H, dt, seed, kQkv),
          l.qkv_bias ? random_tensor({qkv_rows}, dt, seed, kQkvBias, -0.5f, 0.5f) : absent_tensor(dt),
          l.qk_norm ? random_tensor({D}, dt, seed, kQNorm, 0.5f, 1.5f) : absent_tensor(dt),
          l.qk_norm ? random_tensor({D}, dt, seed, kKNorm, 0.5f, 1.5f) : absent_tensor(dt),
          projection(H, l.heads * D, dt, seed, kO),
          random_tensor({H}, dt, seed, kPostNorm, 0.5f, 1.5f),
          projection(2 * I, H, dt, seed, kGateUp),
          projection(H, I, dt, seed, kDown),
      },
      layer_paged_tensors(tokens, make_rope_cos_sin_cache(rope, tokens.max_kv, l.rot_dim), at),
      layer_stream_workspaces(T, H, qkv_rows, l.heads * D, dt),
      {
          Tensor::empty({T, 2 * I}, dt),
          Tensor::empty({T, I}, dt),
      },
      layer_attention_workspaces(at),
  });
  Args& a = c.as<Args>();
  a.num_heads = static_cast<int32_t>(l.heads);
  a.num_kv_heads = static_cast<int32_t>(l.kv_heads);
  a.head_dim = static_cast<int32_t>(D);
  a.rope_style = rope_style_from_name(wl_string(w, "style", "neox"));
  a.eps = static_cast<float>(wl_float(w, "eps", 1e-6));
  a.sm_scale = static_cast<float>(pw.sm_scale);
  a.window_left = static_cast<int32_t>(pw.window_left);
  a.first_layer = l.first_layer ? 1 : 0;
  a.cuda_graph = pw.cuda_graph;
  c.bind(layout);
  return c;
}

// Against the oracle, whose activations between the parts are f64, an implementation
// differs by its own roundings: each intermediate it stores in the dtype (the normalised
// rows, q, k, v, the attention output, o, gate_up, act: the baseline rounds them all, as
// the parts' outputs) is off by up to half an ulp per element, or a whole one where an
// earlier difference moved it across a rounding boundary. Through a GEMM such differences
// random-walk to about ulp * typical, with typical = sqrt(K) * rms(input) * rms(weight) as
// in linear_tolerance.h (and rms_norm_linear's term for its normalised rows); through the
// rope an input that moved by an ulp moves its rotated pair partner's output by as much,
// even where that output is near zero. So each output gets the dtype's default tolerance
// (its own rounding, a flip of the residual stream's) plus 8 * ulp * typical of what
// writes it: several roundings along the way add up, and 8 covers the tail of the largest
// of many elements. The CPU baseline against the oracle, 350 cases of the test workloads:
// at most 0.44 of these bounds (k_cache's worst element at 1.25 of the bare default):
//   k_cache, v_cache: the rows of this step's k and v, of rms at most that of the
//             projection (sqrt(H) * rms(input_norm) * rms(qkv_weight)) or, with q/k
//             norms, rms(k_norm);
//   residual: o's projection, of attention outputs no larger than the values (rms 1 or
//             less in the cases: unit-rms projections);
//   hidden:   the down projection, of act = silu(g) * u, rms at most that of gate_up's
//             rows (sqrt(H) * rms(post_attention_norm) * rms(gate_up_weight)).
Tolerance decoder_layer_tolerance(const OpCase& c, const TensorArg& arg, DType dt) {
  Tolerance tol = default_tolerance(dt);
  const auto& a = c.as<Args>();
  const DType model = a.input_norm.dtype;
  const double ulp = half_rounding_unit(model);
  const auto typical = [](const TensorView& in_norm, const TensorView& weight) {
    return std::sqrt(static_cast<double>(weight.shape[1])) * sampled_rms(in_norm) * sampled_rms(weight);
  };
  double scale = 0;
  if (arg.name == "k_cache" || arg.name == "v_cache") {
    scale = std::max(typical(a.input_norm, a.qkv_weight) + sampled_rms(a.qkv_bias), sampled_rms(a.k_norm));
  } else if (arg.name == "residual") {
    scale = std::sqrt(static_cast<double>(a.o_weight.shape[1])) * sampled_rms(a.o_weight);
  } else if (arg.name == "hidden") {
    scale = std::sqrt(static_cast<double>(a.down_weight.shape[1])) * typical(a.post_attention_norm, a.gate_up_weight) *
            sampled_rms(a.down_weight);
  }
  tol.atol += 8 * ulp * scale;
  return tol;
}

// Minimal traffic: the weights once, the stream read and written, the K/V every query
// reads and this step's K/V written, positions, slots, metadata and cos/sin rows; the
// intermediates stay on chip in a fused layer. Flops: the four projections and attention.
OpCost decoder_layer_cost(const OpCase& c) {
  const auto& a = c.as<Args>();
  const attn::PagedWorkload pw = parse_layer_workload(c.workload).batch;
  const OpCost attention = attn::paged_attention_cost(pw);
  const double T = static_cast<double>(a.hidden.shape[0]);
  double weights = 0;
  for (const TensorView* v : {&a.input_norm, &a.qkv_weight, &a.qkv_bias, &a.q_norm, &a.k_norm, &a.o_weight,
                              &a.post_attention_norm, &a.gate_up_weight, &a.down_weight})
    weights += static_cast<double>(v->nbytes());
  const double gemm = 2.0 * T *
                      static_cast<double>(a.qkv_weight.numel() + a.o_weight.numel() + a.gate_up_weight.numel() +
                                          a.down_weight.numel());
  return OpCost{weights + paged_layer_bytes(a, pw), gemm + attention.flops, a.input_norm.dtype};
}

// A captured call's workload: the shapes and attributes from the tensors, the batch from
// the host mirrors of the metadata.
Json workload_from_call(const void* raw) {
  const auto& a = *static_cast<const Args*>(raw);
  Json w{{"hidden", a.hidden.shape[1]},
         {"heads", a.num_heads},
         {"kv_heads", a.num_kv_heads},
         {"head_dim", a.head_dim},
         {"intermediate", a.down_weight.shape[1]},
         {"dtype", std::string(dtype_name(a.input_norm.dtype))}};
  add_batch_of_call(a, w);
  if (a.cos_sin_cache.shape[1] != a.head_dim) w["rot_dim"] = a.cos_sin_cache.shape[1];
  if (a.rope_style != RopeStyle::neox) w["style"] = rope_style_name(a.rope_style);
  if (a.q_norm.data != nullptr && a.q_norm.numel() > 0) w["qk_norm"] = true;
  if (a.qkv_bias.data != nullptr && a.qkv_bias.numel() > 0) w["qkv_bias"] = true;
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
  d.summary = "one pre-norm decoder layer (Llama / Qwen3): norms, QKV, rope, KV-cache write, paged attention, o, "
              "SwiGLU MLP, residual adds";
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
          {"gate_up_weight", ArgRole::in, offsetof(Args, gate_up_weight)},
          {"down_weight", ArgRole::in, offsetof(Args, down_weight)},
      },
      layer_paged_args<Args>(),
      layer_stream_workspace_args<Args>(),
      {
          {"gate_up", ArgRole::workspace, offsetof(Args, gate_up)},
          {"act", ArgRole::workspace, offsetof(Args, act)},
      },
      layer_attention_workspace_args<Args>(),
  });
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_layer_case(layout, w, seed); };
  d.cost = decoder_layer_cost;
  d.tolerance = decoder_layer_tolerance;
  d.workload_from_call = workload_from_call;
  // Every op whose candidate must reach the layer: those the composition calls, and the
  // parts of the fused ones among them (their own compositions call those).
  d.covers = {"rms_norm_linear", "rms_norm", "fused_add_rms_norm", "linear", "rope_and_cache", "rotary_embedding",
              "qk_norm_rope", "reshape_and_cache", "batch_decode_paged_attention", "batch_prefill_paged_attention",
              "silu_and_mul"};
  d.composed[static_cast<int>(DeviceType::cpu)] = decoder_layer_composed_cpu;
  d.composed[static_cast<int>(DeviceType::cuda)] = decoder_layer_composed_cuda;
  d.architectures = {"llama", "mistral", "qwen2", "qwen3"};

  using J = Json;
  // Head dims 64 and 128: the CUDA attention kernels' (64, 128, 256).
  d.test_workloads = {
      // A decode batch over earlier context (pages of 4: several pages a sequence).
      J{{"hidden", 64}, {"heads", 4}, {"kv_heads", 2}, {"head_dim", 64}, {"intermediate", 96},
        {"qo_lens", {1, 1, 1}}, {"kv_lens", {5, 17, 33}}, {"page_size", 4}},
      // Qwen3's q/k norms on a mixed batch: a decode, a fresh prefill, a chunk after context.
      J{{"hidden", 128}, {"heads", 4}, {"kv_heads", 1}, {"head_dim", 64}, {"intermediate", 160},
        {"qo_lens", {1, 7, 12}}, {"kv_lens", {9, 7, 20}}, {"page_size", 8}, {"qk_norm", true}},
      // The first layer: the embedding in hidden, residual not read.
      J{{"hidden", 64}, {"heads", 2}, {"kv_heads", 2}, {"head_dim", 64}, {"intermediate", 128},
        {"qo_lens", {10}}, {"kv_lens", {10}}, {"first_layer", true}},
      // f16, Qwen2's qkv bias, a sliding window.
      J{{"hidden", 96}, {"heads", 3}, {"kv_heads", 1}, {"head_dim", 64}, {"intermediate", 64},
        {"qo_lens", {4, 1}}, {"kv_lens", {20, 3}}, {"dtype", "f16"}, {"qkv_bias", true}, {"window_left", 6}},
      // Interleaved partial rotary; NaN in every cache slot no query may read.
      J{{"hidden", 64}, {"heads", 2}, {"kv_heads", 1}, {"head_dim", 64}, {"rot_dim", 32}, {"style", "gptj"},
        {"intermediate", 64}, {"qo_lens", {3}}, {"kv_lens", {8}}, {"page_size", 4}, {"nan_past_end", true}},
      // Production head dim.
      J{{"hidden", 256}, {"heads", 2}, {"kv_heads", 1}, {"head_dim", 128}, {"intermediate", 256},
        {"qo_lens", {1, 1}}, {"kv_lens", {40, 70}}, {"qk_norm", true}},
      // No tokens.
      J{{"hidden", 64}, {"heads", 2}, {"kv_heads", 1}, {"head_dim", 64}, {"intermediate", 64},
        {"qo_lens", Json::array()}, {"kv_lens", Json::array()}},
  };
  // Llama-3.1-8B and Qwen3-8B: 32 query / 8 KV heads of 128, hidden 4096; a decode step of
  // batch 1 (4k context) and 32 (2k contexts), and a 2k prefill chunk after 2k of context.
  auto model = [](bool qwen3, const J& qo, const J& kv) {
    J w{{"hidden", 4096}, {"heads", 32}, {"kv_heads", 8}, {"head_dim", 128},
        {"intermediate", qwen3 ? 12288 : 14336}, {"rope_theta", qwen3 ? 1e6 : 5e5}, {"qo_lens", qo}, {"kv_lens", kv}};
    if (qwen3) w["qk_norm"] = true;
    return w;
  };
  for (bool qwen3 : {false, true}) {
    d.bench_workloads.push_back(model(qwen3, J{1}, J{4096}));
    d.bench_workloads.push_back(model(qwen3, J(std::vector<int64_t>(32, 1)), J(std::vector<int64_t>(32, 2048))));
    d.bench_workloads.push_back(model(qwen3, J{2048}, J{4096}));
  }
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("decoder_layer", cpu, decoder_layer_cpu);

}  // namespace
}  // namespace fk::ops
