#include "models/llm/weights.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "models/llm/fp8_blocks.h"
#include "fk/element.h"
#include "fk/random.h"
#include "fk/runtime.h"
#include "fk/status.h"

namespace fk::engine {

namespace {

// Per-element change applied while loading (on the host, in double, one rounding).
using Transform = std::function<double(double)>;

std::string shape_string(const Shape& s) { return shape_to_string(s.data(), static_cast<int>(s.size())); }

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
  bool is_fp8(const std::string& name) const { return has(name) && ckpt_.info(name).dtype == DType::f8e4m3fn; }
  std::string path() const { return ckpt_.path().string(); }
  void* stream() const { return stream_; }

  // One checkpoint tensor of exactly `shape`, as a new device tensor of the model dtype.
  Tensor tensor(const std::string& name, const Shape& shape, const Transform& f = nullptr) {
    Tensor t = Tensor::empty(shape, dtype_, device_, stream_);
    write_rows(t, 0, name, shape, f);
    return t;
  }

  // Several checkpoint tensors stacked along dim 0 into one ("fusing" q/k/v, gate/up).
  Tensor stacked(const std::vector<std::string>& names, const std::vector<Shape>& shapes) {
    Tensor t = Tensor::empty(stacked_shape(shapes), dtype_, device_, stream_);
    int64_t row = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      write_rows(t, row, names[i], shapes[i], nullptr);
      row += shapes[i][0];
    }
    return t;
  }

  // Rows of 2-D checkpoint tensors, picked and ordered: part i contributes rows rows[i] of
  // tensor names[i] ([*, cols]), one after the other (Qwen3-Next's regrouped projections).
  // Not for fp8 tensors (no 128-row block would survive the reordering).
  Tensor gathered_rows(const std::vector<std::string>& names, const std::vector<std::vector<int64_t>>& rows,
                       int64_t cols, DType out = DType::f32) {
    if (out == DType::f32) out = dtype_;
    int64_t total = 0;
    for (const auto& r : rows) total += static_cast<int64_t>(r.size());
    const size_t esize = dtype_size(out);
    std::vector<uint8_t> staged(static_cast<size_t>(total * cols) * esize);
    int64_t row = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      if (!ckpt_.contains(names[i]))
        FK_FAIL(FK_ERR_INVALID_ARGUMENT, "checkpoint ", path(), " has no tensor '", names[i], "', which a ",
                spec_.config.model_type, " model of this config needs");
      const safetensors::TensorInfo& info = ckpt_.info(names[i]);
      FK_CHECK(info.shape.size() == 2 && info.shape[1] == cols, "checkpoint tensor '", names[i], "' has shape ",
               shape_string(info.shape), " but the config implies [*, ", cols, "]");
      FK_CHECK(info.dtype && (*info.dtype == DType::f32 || *info.dtype == DType::f16 || *info.dtype == DType::bf16),
               "checkpoint tensor '", names[i], "' has dtype ", info.dtype_name, "; it loads from F32, F16 or BF16");
      const auto* in = static_cast<const char*>(ckpt_.view(names[i]).data);
      const size_t src_size = dtype_size(*info.dtype);
      for (int64_t src_row : rows[i]) {
        FK_CHECK(src_row >= 0 && src_row < info.shape[0], "checkpoint tensor '", names[i], "': row ", src_row,
                 " is outside its ", info.shape[0], " rows");
        for (int64_t c = 0; c < cols; ++c)
          store_element(staged.data() + (row * cols + c) * static_cast<int64_t>(esize), out,
                        load_element(in + (src_row * cols + c) * static_cast<int64_t>(src_size), *info.dtype));
        ++row;
      }
    }
    Tensor t = Tensor::empty({total, cols}, out, device_, stream_);
    rt::memcpy_sync(t.data(), device_, staged.data(), Device::cpu(), staged.size());
    return t;
  }

  // A checkpoint tensor [E, A, B] as [E, B, A] in the model dtype (gpt-oss's experts, stored
  // input-major). With deinterleave, the B = 2n source columns alternate (gate, up) and
  // become rows [gates 0..n) | ups 0..n): gate_up[..., ::2] and gate_up[..., 1::2].
  Tensor transposed_experts(const std::string& name, int64_t E, int64_t A, int64_t B, bool deinterleave) {
    if (!ckpt_.contains(name))
      FK_FAIL(FK_ERR_INVALID_ARGUMENT, "checkpoint ", path(), " has no tensor '", name, "', which a ",
              spec_.config.model_type, " model of this config needs");
    const safetensors::TensorInfo& info = ckpt_.info(name);
    const Shape want{E, A, B};
    FK_CHECK(info.shape == want, "checkpoint tensor '", name, "' has shape ", shape_string(info.shape),
             " but the config implies ", shape_string(want));
    FK_CHECK(info.dtype && (*info.dtype == DType::f32 || *info.dtype == DType::f16 || *info.dtype == DType::bf16),
             "checkpoint tensor '", name, "' has dtype ", info.dtype_name, "; it loads from F32, F16 or BF16");
    const auto* in = static_cast<const char*>(ckpt_.view(name).data);
    const size_t src_size = dtype_size(*info.dtype), esize = dtype_size(dtype_);
    std::vector<uint8_t> staged(static_cast<size_t>(E * A * B) * esize);
    for (int64_t e = 0; e < E; ++e)
      for (int64_t b = 0; b < B; ++b) {
        const int64_t col = deinterleave ? (b < B / 2 ? 2 * b : 2 * (b - B / 2) + 1) : b;
        for (int64_t a = 0; a < A; ++a)
          store_element(staged.data() + ((e * B + b) * A + a) * static_cast<int64_t>(esize), dtype_,
                        load_element(in + ((e * A + a) * B + col) * static_cast<int64_t>(src_size), *info.dtype));
      }
    Tensor t = Tensor::empty({E, B, A}, dtype_, device_, stream_);
    rt::memcpy_sync(t.data(), device_, staged.data(), Device::cpu(), staged.size());
    return t;
  }

  // MXFP4 experts (gpt-oss's released checkpoints): `name`_blocks [E, R, C/32, 16] u8, two
  // E2M1 values a byte (low nibble first), and `name`_scales [E, R, C/32] u8, an E8M0
  // exponent (2^(s - 127)) per 32 values, dequantized to the model dtype as [E, R, C]
  // (exactly: an E2M1 value times a power of two is a bf16 value). With deinterleave the
  // R rows alternate (gate, up) and become [gates | ups], as transposed_experts does.
  Tensor mxfp4_experts(const std::string& name, int64_t E, int64_t R, int64_t C, bool deinterleave) {
    static constexpr double kE2M1[16] = {0.0,  0.5,  1.0,  1.5,  2.0,  3.0,  4.0,  6.0,
                                         -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0};
    const std::string blocks = name + "_blocks", scales = name + "_scales";
    for (const std::string& n : {blocks, scales})
      if (!ckpt_.contains(n))
        FK_FAIL(FK_ERR_INVALID_ARGUMENT, "checkpoint ", path(), " has no tensor '", n, "', which MXFP4 experts need");
    FK_CHECK(C % 32 == 0, "checkpoint tensor '", blocks, "': MXFP4 needs the inner size (", C,
             ") to be a multiple of 32");
    const safetensors::TensorInfo &bi = ckpt_.info(blocks), &si = ckpt_.info(scales);
    const Shape want_blocks{E, R, C / 32, 16}, want_scales{E, R, C / 32};
    FK_CHECK(bi.shape == want_blocks && bi.dtype == DType::u8, "checkpoint tensor '", blocks, "' is ", bi.dtype_name,
             shape_string(bi.shape), " but MXFP4 experts of this config are U8", shape_string(want_blocks));
    FK_CHECK(si.shape == want_scales && si.dtype == DType::u8, "checkpoint tensor '", scales, "' is ", si.dtype_name,
             shape_string(si.shape), " but the E8M0 scales of this config's MXFP4 experts are U8",
             shape_string(want_scales));
    const auto* b = static_cast<const uint8_t*>(ckpt_.view(blocks).data);
    const auto* s = static_cast<const uint8_t*>(ckpt_.view(scales).data);
    const size_t esize = dtype_size(dtype_);
    std::vector<uint8_t> staged(static_cast<size_t>(E * R * C) * esize);
    for (int64_t e = 0; e < E; ++e)
      for (int64_t r = 0; r < R; ++r) {
        const int64_t src = deinterleave ? (r < R / 2 ? 2 * r : 2 * (r - R / 2) + 1) : r;
        for (int64_t g = 0; g < C / 32; ++g) {
          const int64_t group = (e * R + src) * (C / 32) + g;
          const double scale = std::ldexp(1.0, static_cast<int>(s[group]) - 127);
          for (int64_t j = 0; j < 16; ++j) {
            const uint8_t byte = b[group * 16 + j];
            const int64_t col = g * 32 + 2 * j;
            uint8_t* dst = staged.data() + ((e * R + r) * C + col) * static_cast<int64_t>(esize);
            store_element(dst, dtype_, kE2M1[byte & 0x0F] * scale);
            store_element(dst + esize, dtype_, kE2M1[byte >> 4] * scale);
          }
        }
      }
    Tensor t = Tensor::empty({E, R, C}, dtype_, device_, stream_);
    rt::memcpy_sync(t.data(), device_, staged.data(), Device::cpu(), staged.size());
    return t;
  }

  // One checkpoint tensor of `shape` as a device tensor of dtype `out` (f32 gate parameters).
  Tensor tensor_as(const std::string& name, const Shape& shape, DType out) {
    Tensor t = Tensor::empty(shape, out, device_, stream_);
    write_rows(t, 0, name, shape, nullptr);
    return t;
  }

  // fp8 checkpoint tensors as stored, stacked along dim 0, and their block scales stacked
  // the same way: part i's scale rows follow part i - 1's. That is the scale grid of the
  // stacked tensor only where each part's rows fill whole 128-row blocks, or where the
  // parts stay separate matrices (experts): the caller's to make sure.
  Fp8Blocks stacked_fp8(const std::vector<std::string>& names, const std::vector<Shape>& shapes) {
    std::vector<Shape> grids;
    for (const Shape& s : shapes) grids.push_back(fp8_scale_shape(s));
    Fp8Blocks b{Tensor::empty(stacked_shape(shapes), DType::f8e4m3fn, device_, stream_),
                Tensor::empty(stacked_shape(grids), DType::f32, device_, stream_)};
    int64_t row = 0, scale_row = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      if (has(names[i]) && !is_fp8(names[i]))
        FK_FAIL(FK_ERR_INVALID_ARGUMENT, "checkpoint tensor '", names[i], "' has dtype ",
                ckpt_.info(names[i]).dtype_name, " where fp8 (F8_E4M3) is expected, like the other expert weights of its layer");
      write_rows(b.weight, row, names[i], shapes[i], nullptr);
      check_scales(names[i], shapes[i]);
      write_rows(b.scale, scale_row, names[i] + kScaleSuffix, grids[i], nullptr);
      row += shapes[i][0];
      scale_row += grids[i][0];
    }
    return b;
  }

 private:
  static constexpr const char* kScaleSuffix = "_scale_inv";  // X.weight -> X.weight_scale_inv

  static Shape stacked_shape(const std::vector<Shape>& shapes) {
    Shape shape = shapes[0];
    shape[0] = 0;
    for (const Shape& s : shapes) shape[0] += s[0];
    return shape;
  }

  // The block scales of fp8 tensor `name` of `shape`, checked: present, one per 128x128
  // block, a float dtype.
  TensorView check_scales(const std::string& name, const Shape& shape) const {
    const std::string scale = name + kScaleSuffix;
    if (!has(scale))
      FK_FAIL(FK_ERR_INVALID_ARGUMENT, "checkpoint ", path(), ": tensor '", name, "' is fp8 (F8_E4M3) but '", scale,
              "', its block scales, is missing");
    const safetensors::TensorInfo& info = ckpt_.info(scale);
    const Shape want = fp8_scale_shape(shape);
    FK_CHECK(info.shape == want, "checkpoint tensor '", scale, "' has shape ", shape_string(info.shape),
             " but the 128x128 block scales of '", name, "' ", shape_string(shape), " are ", shape_string(want));
    FK_CHECK(info.dtype && (*info.dtype == DType::f32 || *info.dtype == DType::bf16 || *info.dtype == DType::f16),
             "checkpoint tensor '", scale, "' has dtype ", info.dtype_name,
             "; block scales load from F32, BF16 or F16");
    return ckpt_.view(scale);
  }

  void write_rows(Tensor& dst, int64_t row, const std::string& name, const Shape& shape, const Transform& f) {
    if (!ckpt_.contains(name))
      FK_FAIL(FK_ERR_INVALID_ARGUMENT, "checkpoint ", path(), " has no tensor '", name, "', which a ",
              spec_.config.model_type, " model of this config needs");
    const safetensors::TensorInfo& info = ckpt_.info(name);
    FK_CHECK(info.shape == shape, "checkpoint tensor '", name, "' has shape ", shape_string(info.shape),
             " but the config implies ", shape_string(shape));
    const bool fp8 = info.dtype == DType::f8e4m3fn;
    if (fp8 && !spec_.fp8_checkpoint)
      FK_FAIL(FK_ERR_INVALID_ARGUMENT, "checkpoint tensor '", name, "' is fp8 (F8_E4M3) but config.json has no "
              "quantization_config of block fp8 (quant_method \"fp8\", weight_block_size [128, 128]) to scale it by");
    const bool wide = info.dtype && (*info.dtype == DType::f32 || *info.dtype == DType::f16 || *info.dtype == DType::bf16);
    FK_CHECK(fp8 || wide, "checkpoint tensor '", name, "' has dtype ", info.dtype_name,
             "; the engine loads F32, F16 and BF16 (and F8_E4M3 from block-fp8 checkpoints)");
    const DType out = dst.dtype();
    FK_CHECK(out != DType::f8e4m3fn || fp8, "checkpoint tensor '", name, "' is ", info.dtype_name, ", not fp8");
    const TensorView src = ckpt_.view(name);
    const int64_t n = src.numel();
    const size_t esize = dtype_size(out);
    void* dst_ptr = static_cast<char*>(dst.data()) + row * (dst.numel() / dst.size(0)) * static_cast<int64_t>(esize);
    if (*info.dtype == out && !f) {
      rt::memcpy_sync(dst_ptr, device_, src.data, Device::cpu(), static_cast<size_t>(n) * esize);
      return;
    }
    // fp8 read into a 16-bit dtype: value * the scale of its 128x128 block ([..., R, C]
    // matrices, the leading dimensions separate).
    const TensorView scale = fp8 ? check_scales(name, shape) : TensorView{};
    const int64_t R = fp8 ? shape[shape.size() - 2] : 1, C = fp8 ? shape.back() : n;
    const int64_t RB = (R + kFp8Block - 1) / kFp8Block, CB = (C + kFp8Block - 1) / kFp8Block;
    std::vector<uint8_t> staged(static_cast<size_t>(n) * esize);
    const size_t src_size = dtype_size(*info.dtype);
    const auto* in = static_cast<const char*>(src.data);
    for (int64_t i = 0; i < n; i += C) {
      const int64_t r = (i / C) % R, m = i / (R * C);
      for (int64_t c = 0; c < C; ++c) {
        double x = load_element(in + (i + c) * static_cast<int64_t>(src_size), *info.dtype);
        if (fp8) x *= load_element(scale.element_ptr((m * RB + r / kFp8Block) * CB + c / kFp8Block), scale.dtype);
        if (f) x = f(x);
        store_element(staged.data() + (i + c) * static_cast<int64_t>(esize), out, x);
      }
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

// A layer's experts in block fp8: w13 [E, 2Ie, H] and w2 [E, H, Ie] with their scale grids.
void set_fp8_experts(LayerWeights& lw, Fp8Blocks w13, Fp8Blocks w2) {
  lw.w13 = std::move(w13.weight);
  lw.w13_scale = std::move(w13.scale);
  lw.w2 = std::move(w2.weight);
  lw.w2_scale = std::move(w2.scale);
}

// The experts of a layer (drawn, or stored in 16 or 32 bits) quantized to block fp8.
void quantize_experts(LayerWeights& lw, void* stream) {
  set_fp8_experts(lw, quantize_fp8_blocks(lw.w13, stream), quantize_fp8_blocks(lw.w2, stream));
}

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
                            &l.post_mlp_norm, &l.router, &l.w13, &l.w2, &l.w13_scale, &l.w2_scale,
                            &l.shared_gate_up, &l.shared_down, &l.shared_gate, &l.sinks, &l.router_bias,
                            &l.w13_bias, &l.w2_bias})
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
// With spec.moe.fp8: fp8 experts as stored (scales "<name>_scale_inv"), others quantized.
void load_experts(CheckpointReader& r, const ModelSpec& spec, int64_t l, LayerWeights& lw) {
  const MoeSpec& m = spec.moe;
  const int64_t E = m.num_experts, H = spec.config.hidden_size, Ie = m.intermediate;
  auto n = [&](const std::string& what) { return r.layer_name(l, what); };
  std::string module, tried;
  const std::string router = "." + m.router_name + ".weight";
  for (const std::string& name : m.module_names) {
    tried += (tried.empty() ? "" : ", ") + n(name + router);
    if (r.has(n(name + router))) {
      module = name;
      break;
    }
  }
  if (module.empty())
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "checkpoint has no MoE router for layer ", l, " (looked for ", tried, ")");
  lw.router = r.tensor(n(module + router), {E, H});
  if (m.swigluoai) {
    // gpt-oss: router and expert biases; experts stored [E, H, 2Ie] (gate and up columns
    // alternating) and [E, Ie, H], transposed and de-interleaved into w13 / w2.
    const std::string experts = n(module + ".experts.");
    // MXFP4 (the released checkpoints): blocks [E, 2Ie, H/32, 16] hold the gate_up matrix
    // before transformers transposes it, so its rows are the alternating gate / up columns;
    // down_proj's blocks hold [E, H, Ie], w2's own layout. Dequantized once at load.
    const bool mxfp4 = r.has(experts + "gate_up_proj_blocks") || r.has(experts + "down_proj_blocks");
    lw.router_bias = r.tensor(n(module + "." + m.router_name + ".bias"), {E});
    lw.w13 = mxfp4 ? r.mxfp4_experts(experts + "gate_up_proj", E, 2 * Ie, H, /*deinterleave=*/true)
                   : r.transposed_experts(experts + "gate_up_proj", E, H, 2 * Ie, /*deinterleave=*/true);
    {  // the bias columns de-interleaved like w13's rows
      Tensor host = r.tensor(experts + "gate_up_proj_bias", {E, 2 * Ie}).to(Device::cpu());
      Tensor fixed = Tensor::empty({E, 2 * Ie}, host.dtype());
      const size_t es = dtype_size(host.dtype());
      for (int64_t e = 0; e < E; ++e)
        for (int64_t b = 0; b < 2 * Ie; ++b) {
          const int64_t col = b < Ie ? 2 * b : 2 * (b - Ie) + 1;
          std::memcpy(static_cast<char*>(fixed.data()) + (e * 2 * Ie + b) * static_cast<int64_t>(es),
                      static_cast<const char*>(host.data()) + (e * 2 * Ie + col) * static_cast<int64_t>(es), es);
        }
      lw.w13_bias = fixed.to(lw.w13.device());
    }
    lw.w2 = mxfp4 ? r.mxfp4_experts(experts + "down_proj", E, H, Ie, /*deinterleave=*/false)
                  : r.transposed_experts(experts + "down_proj", E, Ie, H, /*deinterleave=*/false);
    lw.w2_bias = r.tensor(experts + "down_proj_bias", {E, H});
    return;
  }
  if (m.shared_intermediate > 0) load_shared_expert(r, spec, l, module, lw);
  const std::string experts = module + ".experts.";
  auto finish = [&] {
    if (m.fp8 && !lw.w13_scale.defined()) quantize_experts(lw, r.stream());
  };
  if (r.has(n(experts + "gate_up_proj"))) {
    const std::string gate_up = n(experts + "gate_up_proj"), down = n(experts + "down_proj");
    if (m.fp8 && r.is_fp8(gate_up)) {
      // Fused tensors carry the scale grid of the fused [2Ie, H] matrix: no alignment needed.
      set_fp8_experts(lw, r.stacked_fp8({gate_up}, {{E, 2 * Ie, H}}), r.stacked_fp8({down}, {{E, H, Ie}}));
    } else {
      lw.w13 = r.tensor(gate_up, {E, 2 * Ie, H});
      lw.w2 = r.tensor(down, {E, H, Ie});
    }
    return finish();
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
    if (m.fp8 && r.is_fp8(gate_up[0])) {
      // An expert's gate and up stack into its w13 rows, and their scale grids into the
      // w13 grid, only when no 128-row block straddles the two.
      if (Ie % kFp8Block != 0)
        FK_FAIL(FK_ERR_UNSUPPORTED, "checkpoint ", r.path(), ": the fp8 experts of this ", spec.config.model_type,
                " model have intermediate size ", Ie, ", not a multiple of 128, so their gate and up projections' "
                "128x128 scale blocks cannot be stacked into fused_experts' w13 (layer ", l, ")");
      const Fp8Blocks w13 = r.stacked_fp8(gate_up, gate_up_shapes), w2 = r.stacked_fp8(down, down_shapes);
      set_fp8_experts(lw, {w13.weight.reshape({E, 2 * Ie, H}), w13.scale.reshape(fp8_scale_shape({E, 2 * Ie, H}))},
                      {w2.weight.reshape({E, H, Ie}), w2.scale.reshape(fp8_scale_shape({E, H, Ie}))});
    } else {
      lw.w13 = r.stacked(gate_up, gate_up_shapes).reshape({E, 2 * Ie, H});
      lw.w2 = r.stacked(down, down_shapes).reshape({E, H, Ie});
    }
    return finish();
  }
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, "checkpoint has no expert weights for layer ", l, " (looked for ", tried, ")");
}

std::vector<int64_t> row_range_of(int64_t begin, int64_t n) {
  std::vector<int64_t> r(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) r[static_cast<size_t>(i)] = begin + i;
  return r;
}

// Qwen3-Next's q_proj rows are [query (D); gate (D)] per head: the queries of every head,
// then the gates (part 0: queries, part 1: gates).
std::vector<int64_t> gated_q_rows(const ModelConfig& c, int part) {
  std::vector<int64_t> r;
  for (int64_t h = 0; h < c.num_attention_heads; ++h)
    for (int64_t d : row_range_of(h * 2 * c.head_dim + part * c.head_dim, c.head_dim)) r.push_back(d);
  return r;
}

// in_proj_qkvz rows are per key-head group g: [q_g (K) | k_g (K) | v_g (r*V) | z_g (r*V)],
// r = Hv / Hk; in_proj_ba rows per group: [b_g (r) | a_g (r)]. part: 0 q, 1 k, 2 v, 3 z of
// qkvz; 0 b, 1 a of ba. Value head g*r + j is the j-th of group g, as transformers reshapes.
std::vector<int64_t> qkvz_rows(const LinearAttentionConfig& la, int part) {
  const int64_t K = la.k_head_dim, rV = la.v_heads / la.k_heads * la.v_head_dim, G = 2 * K + 2 * rV;
  const int64_t offset[4] = {0, K, 2 * K, 2 * K + rV}, size[4] = {K, K, rV, rV};
  std::vector<int64_t> r;
  for (int64_t g = 0; g < la.k_heads; ++g)
    for (int64_t x : row_range_of(g * G + offset[part], size[part])) r.push_back(x);
  return r;
}
std::vector<int64_t> ba_rows(const LinearAttentionConfig& la, int part) {
  const int64_t rep = la.v_heads / la.k_heads;
  std::vector<int64_t> r;
  for (int64_t g = 0; g < la.k_heads; ++g)
    for (int64_t x : row_range_of(g * 2 * rep + part * rep, rep)) r.push_back(x);
  return r;
}

// A gated DeltaNet layer's tensors (linear_attn.*).
void load_linear_attention(CheckpointReader& r, const ModelSpec& spec, int64_t l, LayerWeights& lw) {
  const ModelConfig& c = spec.config;
  const LinearAttentionConfig& la = c.linear_attention;
  const int64_t H = c.hidden_size;
  auto n = [&](const std::string& what) { return r.layer_name(l, "linear_attn." + what); };
  const std::string qkvz = n("in_proj_qkvz.weight"), ba = n("in_proj_ba.weight");
  lw.lin_in = r.gathered_rows({qkvz, qkvz, qkvz, ba, ba},
                              {qkvz_rows(la, 0), qkvz_rows(la, 1), qkvz_rows(la, 2), ba_rows(la, 0), ba_rows(la, 1)},
                              H);
  lw.lin_z = r.gathered_rows({qkvz}, {qkvz_rows(la, 3)}, H);
  lw.conv_w = r.tensor(n("conv1d.weight"), {la.conv_dim(), 1, la.conv_kernel}).reshape({la.conv_dim(), la.conv_kernel});
  lw.a_log = r.tensor_as(n("A_log"), {la.v_heads}, DType::f32);
  lw.dt_bias = r.tensor_as(n("dt_bias"), {la.v_heads}, DType::f32);
  lw.lin_norm = r.tensor(n("norm.weight"), {la.v_head_dim});
  lw.lin_out = r.tensor(n("out_proj.weight"), {H, la.value_dim()});
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
    if (spec.is_linear_layer(l)) {
      load_linear_attention(r, spec, l, lw);
    } else if (spec.attention_output_gate) {
      const std::string qn = n("self_attn.q_proj.weight"), kn = n("self_attn.k_proj.weight"),
                        vn = n("self_attn.v_proj.weight");
      lw.qkv = r.gathered_rows({qn, kn, vn, qn},
                               {gated_q_rows(c, 0), row_range_of(0, kv), row_range_of(0, kv), gated_q_rows(c, 1)}, H);
    } else {
      lw.qkv = r.stacked({n("self_attn.q_proj.weight"), n("self_attn.k_proj.weight"), n("self_attn.v_proj.weight")},
                         {{q, H}, {kv, H}, {kv, H}});
    }
    if (!spec.is_linear_layer(l)) {
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
    if (spec.attention_sinks) lw.sinks = r.tensor_as(n("self_attn.sinks"), {c.num_attention_heads}, DType::f32);
    }
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
    if (spec.is_linear_layer(l)) {
      const LinearAttentionConfig& la = c.linear_attention;
      lw.lin_in = projection(la.conv_dim() + 2 * la.v_heads, H);
      lw.lin_z = projection(la.value_dim(), H);
      lw.conv_w = normal({la.conv_dim(), la.conv_kernel}, static_cast<float>(1.0 / std::sqrt(static_cast<double>(la.conv_kernel))));
      // A_log = log(A), A in about (0, 16] as transformers initialises it; dt_bias = 1.
      lw.a_log = Tensor::empty({la.v_heads}, DType::f32, device, stream);
      fill_normal(lw.a_log, seed, (stream_id++) << 40, 0.5f, 1.0f, stream);
      lw.dt_bias = Tensor::empty({la.v_heads}, DType::f32, device, stream);
      fill_normal(lw.dt_bias, seed, 0, 1.0f, 0.0f, stream);
      lw.lin_norm = constant({la.v_head_dim}, 1.0f);
      lw.lin_out = projection(H, la.value_dim());
    }
    if (!spec.is_linear_layer(l)) {
    lw.qkv = projection(spec.qkv_rows(), H);
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
    if (spec.attention_sinks) {  // sink logits of the size gpt-oss learns (a few units)
      lw.sinks = Tensor::empty({c.num_attention_heads}, DType::f32, device, stream);
      fill_normal(lw.sinks, seed, (stream_id++) << 40, 0.0f, 2.0f, stream);
    }
    }
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
      if (spec.moe.swigluoai) {
        lw.router_bias = normal({E}, 0.02f);
        lw.w13_bias = normal({E, 2 * Ie}, 0.02f);
        lw.w2_bias = normal({E, H}, 0.02f);
      }
      if (spec.moe.fp8) quantize_experts(lw, stream);
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
