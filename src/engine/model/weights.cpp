#include "engine/model/weights.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "fk/element.h"
#include "fk/random.h"
#include "fk/runtime.h"
#include "fk/status.h"

namespace fk::engine {

namespace {

// Per-element change applied while loading (on the host, in double, one rounding).
using Transform = std::function<double(double)>;

// Writes checkpoint tensors into row ranges of device tensors, converting dtypes on the host.
class CheckpointReader {
 public:
  CheckpointReader(const ModelSpec& spec, const safetensors::Checkpoint& ckpt, DType dtype, Device device,
                   void* stream)
      : spec_(spec), ckpt_(ckpt), dtype_(dtype), device_(device), stream_(stream) {
    // Multimodal wrappers (Gemma3ForConditionalGeneration) nest the text model.
    prefix_ = spec.prefix;
    if (!ckpt.contains(prefix_ + "embed_tokens.weight") && ckpt.contains("language_model.model.embed_tokens.weight"))
      prefix_ = "language_model.model.";
  }

  std::string layer_name(int64_t l, const std::string& what) const {
    return concat(prefix_, "layers.", l, ".", what);
  }
  const std::string& prefix() const { return prefix_; }
  bool has(const std::string& name) const { return ckpt_.contains(name); }

  // One checkpoint tensor of exactly `shape`, as a new device tensor.
  Tensor tensor(const std::string& name, const Shape& shape, const Transform& f = nullptr) {
    Tensor t = Tensor::empty(shape, dtype_, device_, stream_);
    write_rows(t, 0, name, shape, f);
    return t;
  }

  // Several checkpoint tensors stacked along dim 0 into one ("fusing" q/k/v, gate/up).
  Tensor stacked(const std::vector<std::string>& names, const std::vector<Shape>& shapes) {
    int64_t rows = 0;
    for (const Shape& s : shapes) rows += s[0];
    Shape shape = shapes[0];
    shape[0] = rows;
    Tensor t = Tensor::empty(shape, dtype_, device_, stream_);
    int64_t row = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      write_rows(t, row, names[i], shapes[i], nullptr);
      row += shapes[i][0];
    }
    return t;
  }

 private:
  void write_rows(Tensor& dst, int64_t row, const std::string& name, const Shape& shape, const Transform& f) {
    if (!ckpt_.contains(name))
      FK_FAIL(FK_ERR_INVALID_ARGUMENT, "checkpoint ", ckpt_.path().string(), " has no tensor '", name,
              "', which a ", spec_.config.model_type, " model of this config needs");
    const safetensors::TensorInfo& info = ckpt_.info(name);
    FK_CHECK(info.shape == shape, "checkpoint tensor '", name, "' has shape ", shape_to_string(info.shape.data(), static_cast<int>(info.shape.size())),
             " but the config implies ", shape_to_string(shape.data(), static_cast<int>(shape.size())));
    FK_CHECK(info.dtype && (*info.dtype == DType::f32 || *info.dtype == DType::f16 || *info.dtype == DType::bf16),
             "checkpoint tensor '", name, "' has dtype ", info.dtype_name, "; the engine loads F32, F16 and BF16");
    const TensorView src = ckpt_.view(name);
    const int64_t n = src.numel();
    const size_t esize = dtype_size(dtype_);
    void* dst_ptr = static_cast<char*>(dst.data()) + row * (dst.numel() / dst.size(0)) * static_cast<int64_t>(esize);
    if (*info.dtype == dtype_ && !f) {
      rt::memcpy_sync(dst_ptr, device_, src.data, Device::cpu(), static_cast<size_t>(n) * esize);
      return;
    }
    std::vector<uint8_t> staged(static_cast<size_t>(n) * esize);
    const size_t src_size = dtype_size(*info.dtype);
    for (int64_t i = 0; i < n; ++i) {
      double x = load_element(static_cast<const char*>(src.data) + i * static_cast<int64_t>(src_size), *info.dtype);
      if (f) x = f(x);
      store_element(staged.data() + i * static_cast<int64_t>(esize), dtype_, x);
    }
    rt::memcpy_sync(dst_ptr, device_, staged.data(), Device::cpu(), staged.size());
  }

  const ModelSpec& spec_;
  const safetensors::Checkpoint& ckpt_;
  DType dtype_;
  Device device_;
  void* stream_;
  std::string prefix_;
};

// The value HF multiplies Gemma embeddings by: sqrt(hidden) rounded to the model dtype.
double embedding_scale(const ModelSpec& spec, DType dtype) {
  uint8_t buf[8];
  store_element(buf, dtype, std::sqrt(static_cast<double>(spec.config.hidden_size)));
  return load_element(buf, dtype);
}

int64_t bytes_of(const ModelWeights& w) {
  int64_t b = 0;
  auto add = [&](const Tensor& t) {
    if (t.defined()) b += static_cast<int64_t>(t.nbytes());
  };
  add(w.embed);
  if (w.embed_input.data() != w.embed.data()) add(w.embed_input);
  add(w.final_norm);
  if (w.lm_head.data() != w.embed.data()) add(w.lm_head);
  for (const LayerWeights& l : w.layers)
    for (const Tensor* t : {&l.input_norm, &l.qkv, &l.qkv_bias, &l.q_norm, &l.k_norm, &l.o_proj, &l.o_bias,
                            &l.post_attn_norm, &l.pre_mlp_norm, &l.gate_up, &l.gate_up_bias, &l.down, &l.down_bias,
                            &l.post_mlp_norm, &l.router, &l.w13, &l.w2, &l.shared_gate_up, &l.shared_down,
                            &l.shared_gate})
      add(*t);
  return b;
}

// The shared expert of MoE layer l (Qwen2-MoE), under the block's module: gate and up
// stacked like a dense MLP's, down, and the [1, H] weight of its gate logit.
void load_shared_expert(CheckpointReader& r, const ModelSpec& spec, int64_t l, const std::string& module,
                        LayerWeights& lw) {
  const int64_t H = spec.config.hidden_size, Is = spec.moe.shared_intermediate;
  auto n = [&](const std::string& what) { return r.layer_name(l, module + "." + what); };
  lw.shared_gate_up = r.stacked({n("shared_expert.gate_proj.weight"), n("shared_expert.up_proj.weight")},
                                {{Is, H}, {Is, H}});
  lw.shared_down = r.tensor(n("shared_expert.down_proj.weight"), {H, Is});
  lw.shared_gate = r.tensor(n("shared_expert_gate.weight"), {1, H});
}

// The router and experts of MoE layer l: per-expert tensors (what HF checkpoints hold:
// "<module>.experts.<e>.<gate|up|down>.weight") stacked, or transformers 5's fused
// "<module>.experts.gate_up_proj" [E, 2Ie, H] and "<module>.experts.down_proj" [E, H, Ie].
void load_experts(CheckpointReader& r, const ModelSpec& spec, int64_t l, LayerWeights& lw) {
  const MoeSpec& m = spec.moe;
  const int64_t E = m.num_experts, H = spec.config.hidden_size, Ie = m.intermediate;
  auto n = [&](const std::string& what) { return r.layer_name(l, what); };
  std::string module, tried;
  for (const std::string& name : m.module_names) {
    tried += (tried.empty() ? "" : ", ") + n(name + ".gate.weight");
    if (r.has(n(name + ".gate.weight"))) {
      module = name;
      break;
    }
  }
  if (module.empty())
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "checkpoint has no MoE router for layer ", l, " (looked for ", tried, ")");
  lw.router = r.tensor(n(module + ".gate.weight"), {E, H});
  if (m.shared_intermediate > 0) load_shared_expert(r, spec, l, module, lw);
  const std::string experts = module + ".experts.";
  if (r.has(n(experts + "gate_up_proj"))) {
    lw.w13 = r.tensor(n(experts + "gate_up_proj"), {E, 2 * Ie, H});
    lw.w2 = r.tensor(n(experts + "down_proj"), {E, H, Ie});
    return;
  }
  tried = n(experts + "gate_up_proj");
  for (const auto& names : m.expert_weight_names) {
    tried += ", " + n(experts + "0." + names[0] + ".weight");
    if (!r.has(n(experts + "0." + names[0] + ".weight"))) continue;
    std::vector<std::string> gate_up, down;
    std::vector<Shape> gate_up_shapes, down_shapes;
    for (int64_t e = 0; e < E; ++e) {
      const std::string p = concat(experts, e, ".");
      gate_up.push_back(n(p + names[0] + ".weight"));
      gate_up.push_back(n(p + names[1] + ".weight"));
      gate_up_shapes.insert(gate_up_shapes.end(), 2, Shape{Ie, H});
      down.push_back(n(p + names[2] + ".weight"));
      down_shapes.push_back({H, Ie});
    }
    lw.w13 = r.stacked(gate_up, gate_up_shapes).reshape({E, 2 * Ie, H});
    lw.w2 = r.stacked(down, down_shapes).reshape({E, H, Ie});
    return;
  }
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, "checkpoint has no expert weights for layer ", l, " (looked for ", tried, ")");
}

}  // namespace

ModelWeights load_checkpoint_weights(const ModelSpec& spec, const safetensors::Checkpoint& ckpt, DType dtype,
                                     Device device, void* stream) {
  FK_CHECK(dtype == DType::bf16 || dtype == DType::f16, "the engine runs bf16 or f16 models, not ", dtype_name(dtype));
  const ModelConfig& c = spec.config;
  const int64_t H = c.hidden_size, V = c.vocab_size, I = c.intermediate_size, D = c.head_dim;
  const int64_t q = c.q_size(), kv = c.kv_size();
  CheckpointReader r(spec, ckpt, dtype, device, stream);
  const std::string& p = r.prefix();
  ModelWeights w;
  w.embed = r.tensor(p + "embed_tokens.weight", {V, H});
  if (spec.scale_embeddings) {
    const double s = embedding_scale(spec, dtype);
    w.embed_input = r.tensor(p + "embed_tokens.weight", {V, H}, [s, dtype](double x) {
      uint8_t buf[8];  // HF rounds the table to the dtype, then multiplies by the rounded scale
      store_element(buf, dtype, x);
      return load_element(buf, dtype) * s;
    });
  } else {
    w.embed_input = w.embed;
  }
  w.final_norm = r.tensor(p + "norm.weight", {H});
  if (spec.tie_word_embeddings || !r.has("lm_head.weight"))
    w.lm_head = w.embed;
  else
    w.lm_head = r.tensor("lm_head.weight", {V, H});
  const Transform plus_one = [](double x) { return x + 1.0; };
  for (int64_t l = 0; l < spec.num_layers(); ++l) {
    auto n = [&](const std::string& what) { return r.layer_name(l, what); };
    LayerWeights lw;
    lw.input_norm = r.tensor(n("input_layernorm.weight"), {H});
    lw.qkv = r.stacked({n("self_attn.q_proj.weight"), n("self_attn.k_proj.weight"), n("self_attn.v_proj.weight")},
                       {{q, H}, {kv, H}, {kv, H}});
    if (spec.qkv_bias)
      lw.qkv_bias = r.stacked({n("self_attn.q_proj.bias"), n("self_attn.k_proj.bias"), n("self_attn.v_proj.bias")},
                              {{q}, {kv}, {kv}});
    if (spec.qk_norm) {
      const Transform f = spec.qk_norm_weight_offset ? plus_one : nullptr;
      lw.q_norm = r.tensor(n("self_attn.q_norm.weight"), {D}, f);
      lw.k_norm = r.tensor(n("self_attn.k_norm.weight"), {D}, f);
    }
    if (spec.qk_norm_across_heads) {
      lw.q_norm = r.tensor(n("self_attn.q_norm.weight"), {q});
      lw.k_norm = r.tensor(n("self_attn.k_norm.weight"), {kv});
    }
    lw.o_proj = r.tensor(n("self_attn.o_proj.weight"), {H, q});
    if (spec.o_bias) lw.o_bias = r.tensor(n("self_attn.o_proj.bias"), {H});
    if (spec.sandwich_norm) {
      lw.post_attn_norm = r.tensor(n(spec.post_attn_norm_name + ".weight"), {H});
      lw.post_mlp_norm = r.tensor(n(spec.post_mlp_norm_name + ".weight"), {H});
    }
    lw.pre_mlp_norm = r.tensor(n(spec.pre_mlp_norm_name + ".weight"), {H});
    if (spec.is_moe_layer(l)) {
      load_experts(r, spec, l, lw);
      w.layers.push_back(std::move(lw));
      continue;
    }
    lw.gate_up = r.stacked({n("mlp.gate_proj.weight"), n("mlp.up_proj.weight")}, {{I, H}, {I, H}});
    lw.down = r.tensor(n("mlp.down_proj.weight"), {H, I});
    if (spec.mlp_bias) {
      lw.gate_up_bias = r.stacked({n("mlp.gate_proj.bias"), n("mlp.up_proj.bias")}, {{I}, {I}});
      lw.down_bias = r.tensor(n("mlp.down_proj.bias"), {H});
    }
    w.layers.push_back(std::move(lw));
  }
  w.bytes = bytes_of(w);
  return w;
}

ModelWeights dummy_weights(const ModelSpec& spec, DType dtype, Device device, uint64_t seed, void* stream) {
  FK_CHECK(dtype == DType::bf16 || dtype == DType::f16, "the engine runs bf16 or f16 models, not ", dtype_name(dtype));
  const ModelConfig& c = spec.config;
  const int64_t H = c.hidden_size, V = c.vocab_size, I = c.intermediate_size, D = c.head_dim;
  const int64_t q = c.q_size(), kv = c.kv_size();
  uint64_t stream_id = 0;  // each tensor draws from its own Philox offset range
  auto normal = [&](const Shape& shape, float std) {
    Tensor t = Tensor::empty(shape, dtype, device, stream);
    fill_normal(t, seed, (stream_id++) << 40, 0.0f, std, stream);
    return t;
  };
  auto constant = [&](const Shape& shape, float value) {
    Tensor t = Tensor::empty(shape, dtype, device, stream);
    fill_normal(t, seed, 0, value, 0.0f, stream);
    return t;
  };
  const float norm_identity = spec.norm == NormKind::gemma_rms ? 0.0f : 1.0f;
  auto projection = [&](int64_t rows, int64_t fan_in) {
    return normal({rows, fan_in}, static_cast<float>(1.0 / std::sqrt(static_cast<double>(fan_in))));
  };
  ModelWeights w;
  const uint64_t embed_id = stream_id;
  w.embed = normal({V, H}, 1.0f);
  if (spec.scale_embeddings) {
    // The same draws times sqrt(hidden) (rounded once, not twice as a checkpoint's would be).
    w.embed_input = Tensor::empty({V, H}, dtype, device, stream);
    fill_normal(w.embed_input, seed, embed_id << 40, 0.0f,
                static_cast<float>(embedding_scale(spec, dtype)), stream);
  } else {
    w.embed_input = w.embed;
  }
  w.final_norm = constant({H}, norm_identity);
  w.lm_head = spec.tie_word_embeddings ? w.embed : projection(V, H);
  for (int64_t l = 0; l < spec.num_layers(); ++l) {
    LayerWeights lw;
    lw.input_norm = constant({H}, norm_identity);
    lw.qkv = projection(q + 2 * kv, H);
    if (spec.qkv_bias) lw.qkv_bias = normal({q + 2 * kv}, 0.02f);
    if (spec.qk_norm) {
      lw.q_norm = constant({D}, 1.0f);  // the offset is already applied: identity is 1
      lw.k_norm = constant({D}, 1.0f);
    }
    if (spec.qk_norm_across_heads) {
      lw.q_norm = constant({q}, 1.0f);
      lw.k_norm = constant({kv}, 1.0f);
    }
    lw.o_proj = projection(H, q);
    if (spec.o_bias) lw.o_bias = normal({H}, 0.02f);
    if (spec.sandwich_norm) {
      lw.post_attn_norm = constant({H}, norm_identity);
      lw.post_mlp_norm = constant({H}, norm_identity);
    }
    lw.pre_mlp_norm = constant({H}, norm_identity);
    if (spec.is_moe_layer(l)) {
      const int64_t E = spec.moe.num_experts, Ie = spec.moe.intermediate;
      lw.router = projection(E, H);
      lw.w13 = normal({E, 2 * Ie, H}, static_cast<float>(1.0 / std::sqrt(static_cast<double>(H))));
      lw.w2 = normal({E, H, Ie}, static_cast<float>(1.0 / std::sqrt(static_cast<double>(Ie))));
      if (const int64_t Is = spec.moe.shared_intermediate; Is > 0) {
        lw.shared_gate_up = projection(2 * Is, H);
        lw.shared_down = projection(H, Is);
        lw.shared_gate = projection(1, H);
      }
      w.layers.push_back(std::move(lw));
      continue;
    }
    lw.gate_up = projection(2 * I, H);
    lw.down = projection(H, I);
    if (spec.mlp_bias) {
      lw.gate_up_bias = normal({2 * I}, 0.02f);
      lw.down_bias = normal({H}, 0.02f);
    }
    w.layers.push_back(std::move(lw));
  }
  w.bytes = bytes_of(w);
  return w;
}

}  // namespace fk::engine
