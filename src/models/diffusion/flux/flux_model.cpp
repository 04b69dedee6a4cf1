#include "models/diffusion/flux/flux_model.h"

#include <cmath>
#include <cstring>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/dit.h"
#include "fk/ops/elementwise.h"
#include "fk/ops/linear.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "models/step_io.h"

namespace fk::models::diffusion {
namespace {

// Rows [first, first + n) of a [R, C] tensor.
TensorView rows(const Tensor& t, int64_t first, int64_t n) {
  TensorView v = t.view();
  v.data = v.element_ptr(first * v.strides[0]);
  v.shape[0] = n;
  return v;
}

// Columns [first, first + n) of a [R, C] view (row stride unchanged).
TensorView cols(TensorView v, int64_t first, int64_t n) {
  v.data = v.element_ptr(first * v.strides[1]);
  v.shape[1] = n;
  return v;
}

// Chunk k of width h of row b of a [B, k_max * h] modulation matrix: [1, h].
TensorView chunk(const Tensor& mod, int64_t b, int64_t k, int64_t h) { return cols(rows(mod, b, 1), k * h, h); }

ops::LinearArgs linear(const TensorView& out, const TensorView& in, const FluxLinear& w) {
  return ops::LinearArgs{out, in, w.weight, w.bias, TensorView{}, TensorView{}};
}

// The value `x` takes in `dtype` (torch's .to(dtype)).
double round_to(DType dtype, double x) {
  alignas(8) char buf[8];
  store_element(buf, dtype, x);
  return load_element(buf, dtype);
}

// diffusers' get_timestep_embedding(t, dim, flip_sin_to_cos=True, downscale_freq_shift=0):
// [cos(t f_k) | sin(t f_k)], f_k = exp(-ln(10000) k / (dim / 2)).
void timestep_projection(double t, int64_t dim, double* out) {
  const int64_t half = dim / 2;
  for (int64_t k = 0; k < half; ++k) {
    const double f = std::exp(-std::log(10000.0) * static_cast<double>(k) / static_cast<double>(half));
    out[k] = std::cos(t * f);
    out[half + k] = std::sin(t * f);
  }
}

const float* host_f32(const TensorView& v, const char* name, int64_t rows, int64_t cols_count) {
  FK_CHECK(v.device.is_cpu() && v.dtype == DType::f32 && v.is_contiguous(), "flux: ", name,
           " must be a contiguous f32 tensor on the host, got ", describe(v));
  const bool shape_ok = cols_count == 0 ? (v.rank == 1 && (rows < 0 || v.shape[0] == rows))
                                        : (v.rank == 2 && v.shape[1] == cols_count && (rows < 0 || v.shape[0] == rows));
  FK_CHECK(shape_ok, "flux: ", name, " has shape ", describe(v), "; expected ",
           cols_count == 0 ? std::string("[B]") : concat("[L, ", cols_count, "]"));
  return static_cast<const float*>(v.data);
}

}  // namespace

FluxModel::FluxModel(FluxConfig config) : config_(std::move(config)) {}

std::unique_ptr<Model> FluxModel::from_config(std::string_view config_json, std::string_view source) {
  return std::make_unique<FluxModel>(parse_flux_config(config_json, source));
}

std::vector<TensorDecl> FluxModel::weights() const { return flux_weight_decls(config_, options_.dtype); }

std::vector<TensorDecl> FluxModel::inputs() const {
  const DType dt = options_.dtype;
  std::vector<TensorDecl> d = {
      {"hidden_states", {kPerCall, config_.in_channels}, dt, "packed latents: B samples of Li 2x2-patch tokens"},
      {"encoder_hidden_states", {kPerCall, config_.joint_attention_dim}, dt, "T5 prompt embeddings: B x Lt tokens"},
      {"pooled_projections", {kPerCall, config_.pooled_projection_dim}, dt, "CLIP pooled prompt embedding per sample"},
      {"timestep", {kPerCall}, DType::f32, "sigma in [0, 1] per sample, on the host"},
      {"txt_ids", {kPerCall, 3}, DType::f32, "text position ids (zeros), on the host"},
      {"img_ids", {kPerCall, 3}, DType::f32, "image position ids (0, row, column), on the host"}};
  if (config_.guidance_embeds)
    d.push_back({"guidance", {kPerCall}, DType::f32, "embedded guidance scale per sample, on the host"});
  return d;
}

std::vector<TensorDecl> FluxModel::outputs() const {
  return {{"sample", {kPerCall, config_.out_features()}, options_.dtype, "the predicted flow of the packed latents"}};
}

void FluxModel::load(const LoadOptions& o) {
  FK_CHECK(o.dtype == DType::bf16 || o.dtype == DType::f16, "flux: the model dtype must be bf16 or f16, got ",
           dtype_name(o.dtype));
  FK_CHECK(o.max_tokens > 0 && o.max_seqs > 0, "flux: max_tokens and max_seqs must be positive");
  options_ = o;
  weights_ = o.checkpoint.empty() ? random_flux_weights(config_, o.dtype, o.device, o.seed, o.stream)
                                  : load_flux_weights(config_, o.checkpoint, o.dtype, o.device);
  const int64_t t = o.max_tokens, b = o.max_seqs, h = config_.hidden(), m = config_.mlp_hidden();
  auto buffer = [&](const Shape& s, DType dt) { return Tensor::empty(s, dt, o.device, o.stream); };
  x_ = buffer({t, h}, o.dtype);
  n_ = buffer({t, h}, o.dtype);
  qkv_ = buffer({t, 3 * h}, o.dtype);
  cat_ = buffer({t, h + m}, o.dtype);
  mlp_ = buffer({t, m}, o.dtype);
  y_ = buffer({t, h}, o.dtype);
  y2_ = buffer({t, h}, o.dtype);
  act_ = buffer({t, m}, o.dtype);
  out_ = buffer({t, config_.out_features()}, o.dtype);
  mod_ = buffer({b, 6 * h}, o.dtype);
  mod_context_ = buffer({b, 6 * h}, o.dtype);
  mod_single_ = buffer({b, 3 * h}, o.dtype);
  t_proj_ = buffer({b, config_.timestep_channels}, o.dtype);
  g_proj_ = buffer({b, config_.timestep_channels}, o.dtype);
  c1_ = buffer({b, h}, o.dtype);
  c2_ = buffer({b, h}, o.dtype);
  temb_ = buffer({b, h}, o.dtype);
  cond_ = buffer({b, h}, o.dtype);
  positions_ = buffer({t}, DType::i32);
  cu_seqlens_ = buffer({b + 1}, DType::i32);
  cos_sin_ = buffer({t, config_.attention_head_dim}, DType::f32);
  ids_.clear();
  loaded_ = true;
}

TensorView FluxModel::text_rows(const Tensor& t, int64_t b) const {
  return rows(t, b * (text_len_ + image_len_), text_len_);
}
TensorView FluxModel::image_rows(const Tensor& t, int64_t b) const {
  return rows(t, b * (text_len_ + image_len_) + text_len_, image_len_);
}
TensorView FluxModel::sample_rows(const Tensor& t, int64_t b) const {
  return rows(t, b * (text_len_ + image_len_), text_len_ + image_len_);
}

void FluxModel::plan(const StepInputs& in, void* stream) {
  FK_CHECK(loaded_, "flux: plan before load");
  const TensorView ts = step_input(in, "timestep", true, "flux");
  const float* t = host_f32(ts, "timestep", -1, 0);
  const int64_t b = ts.shape[0];
  FK_CHECK(b >= 1, "flux: timestep names no sample");
  FK_CHECK(b <= options_.max_seqs, "flux: ", b, " samples, more than the ", options_.max_seqs,
           " the model was loaded for (max_seqs)");
  const TensorView txt = step_input(in, "txt_ids", true, "flux");
  const TensorView img = step_input(in, "img_ids", true, "flux");
  const float* txt_ids = host_f32(txt, "txt_ids", -1, 3);
  const float* img_ids = host_f32(img, "img_ids", -1, 3);
  const int64_t lt = txt.shape[0], li = img.shape[0], s = lt + li;
  FK_CHECK(li >= 1 && lt >= 1, "flux: txt_ids and img_ids must each name at least one token, got ", lt, " text and ",
           li, " image tokens");
  FK_CHECK(b * s <= options_.max_tokens, "flux: ", b, " samples of ", lt, " text + ", li, " image tokens are ", b * s,
           " joint tokens, more than the ", options_.max_tokens, " the model was loaded for (max_tokens)");
  FK_CHECK(s <= INT32_MAX, "flux: joint sequence of ", s, " tokens is too long");
  batch_ = b, text_len_ = lt, image_len_ = li;

  // Timestep and guidance projections, as diffusers rounds them: t.to(dtype) * 1000 in the
  // dtype, the sinusoid in float, then .to(dtype).
  const DType dt = options_.dtype;
  const int64_t tc = config_.timestep_channels;
  auto project = [&](const float* values, const Tensor& dst) {
    std::vector<double> row(static_cast<size_t>(tc));
    std::vector<char> host(static_cast<size_t>(b * tc) * dtype_size(dt));
    for (int64_t i = 0; i < b; ++i) {
      FK_CHECK(std::isfinite(values[i]), "flux: timestep / guidance ", values[i], " of sample ", i, " is not finite");
      timestep_projection(round_to(dt, round_to(dt, values[i]) * 1000.0), tc, row.data());
      for (int64_t k = 0; k < tc; ++k)
        store_element(host.data() + static_cast<size_t>(i * tc + k) * dtype_size(dt), dt, row[static_cast<size_t>(k)]);
    }
    upload_to(dst, host.data(), host.size(), stream, "flux");
  };
  project(t, t_proj_);
  if (config_.guidance_embeds) {
    const TensorView g = step_input(in, "guidance", true, "flux");
    FK_CHECK(g.rank == 1 && g.shape[0] == b, "flux: guidance must be [", b, "] (one scale per sample), got ",
             describe(g));
    const float* gv = host_f32(g, "guidance", b, 0);
    for (int64_t i = 0; i < b; ++i)
      FK_CHECK(gv[i] >= 0, "flux: guidance scale ", gv[i], " of sample ", i, " is negative");
    project(gv, g_proj_);
  }

  // Positions within the joint sequence and the sequences' offsets.
  std::vector<int32_t> pos(static_cast<size_t>(b * s)), cu(static_cast<size_t>(b + 1));
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < s; ++j) pos[static_cast<size_t>(i * s + j)] = static_cast<int32_t>(j);
  for (int64_t i = 0; i <= b; ++i) cu[static_cast<size_t>(i)] = static_cast<int32_t>(i * s);
  upload_to(positions_, pos.data(), pos.size() * sizeof(int32_t), stream, "flux");
  upload_to(cu_seqlens_, cu.data(), cu.size() * sizeof(int32_t), stream, "flux");

  // The RoPE table of ids = [txt_ids; img_ids] (FluxPosEmbed): for axis a of width d_a,
  // pair k turns by pos_a / theta^(2k / d_a), computed in double, stored as f32.
  std::vector<float> ids(txt_ids, txt_ids + lt * 3);
  ids.insert(ids.end(), img_ids, img_ids + li * 3);
  if (ids != ids_) {
    const int64_t d = config_.attention_head_dim, half = d / 2;
    std::vector<float> table(static_cast<size_t>(s * d));
    for (int64_t j = 0; j < s; ++j) {
      int64_t pair = 0;
      for (int a = 0; a < 3; ++a) {
        const int64_t da = config_.axes_dims_rope[static_cast<size_t>(a)];
        const double p = ids[static_cast<size_t>(j * 3 + a)];
        for (int64_t k = 0; k < da / 2; ++k, ++pair) {
          const double angle =
              p / std::pow(config_.rope_theta, static_cast<double>(2 * k) / static_cast<double>(da));
          table[static_cast<size_t>(j * d + pair)] = static_cast<float>(std::cos(angle));
          table[static_cast<size_t>(j * d + half + pair)] = static_cast<float>(std::sin(angle));
        }
      }
    }
    upload_to(cos_sin_, table.data(), table.size() * sizeof(float), stream, "flux");
    ids_ = std::move(ids);
  }
}

void FluxModel::conditioning(const StepInputs& in, void* stream) {
  const DeviceType be = options_.device.type;
  const int64_t b = batch_;
  const TensorView pooled = step_input(in, "pooled_projections", true, "flux");
  FK_CHECK(pooled.rank == 2 && pooled.shape[0] == b && pooled.shape[1] == config_.pooled_projection_dim,
           "flux: pooled_projections must be [", b, ", ", config_.pooled_projection_dim, "], got ", describe(pooled));
  // TimestepEmbedding: linear_2(silu(linear_1(x))).
  auto embedder = [&](const TensorView& out, const TensorView& x, const FluxLinear& l1, const FluxLinear& l2) {
    call_op(linear(rows(c1_, 0, b), x, l1), be, stream);
    call_op(ops::SiluArgs{rows(c2_, 0, b), rows(c1_, 0, b)}, be, stream);
    call_op(linear(out, rows(c2_, 0, b), l2), be, stream);
  };
  embedder(rows(temb_, 0, b), rows(t_proj_, 0, b), weights_.time_1, weights_.time_2);
  // (time + guidance) + pooled, each sum rounded, as diffusers adds them.
  if (config_.guidance_embeds) {
    embedder(rows(y_, 0, b), rows(g_proj_, 0, b), weights_.guidance_1, weights_.guidance_2);
    call_op(ops::AddArgs{rows(temb_, 0, b), rows(temb_, 0, b), rows(y_, 0, b)}, be, stream);
  }
  embedder(rows(y_, 0, b), pooled, weights_.text_1, weights_.text_2);
  call_op(ops::AddArgs{rows(temb_, 0, b), rows(temb_, 0, b), rows(y_, 0, b)}, be, stream);
  call_op(ops::SiluArgs{rows(cond_, 0, b), rows(temb_, 0, b)}, be, stream);
}

// One flux_double_block call (an L3 op whose baseline is the sequence of registry ops the
// block is made of: per stream and sample adaln_modulate, the QKV GEMM and qk_norm_rope, one
// joint varlen_attention, then the gated attention output and MLP), so that a candidate may
// replace the whole block.
void FluxModel::double_block(const FluxDoubleBlockWeights& w, void* stream) {
  const int64_t b_count = batch_, s = text_len_ + image_len_, t = b_count * s;
  auto stream_weights = [](const FluxLinear& norm1, const FluxLinear& qkv, const Tensor& norm_q, const Tensor& norm_k,
                           const FluxLinear& out, const FluxLinear& up, const FluxLinear& down) {
    ops::FluxDoubleBlockWeights v{};
    v.norm1_weight = norm1.weight, v.norm1_bias = norm1.bias;
    v.qkv_weight = qkv.weight, v.qkv_bias = qkv.bias;
    v.norm_q = norm_q, v.norm_k = norm_k;
    v.out_weight = out.weight, v.out_bias = out.bias;
    v.ff_up_weight = up.weight, v.ff_up_bias = up.bias;
    v.ff_down_weight = down.weight, v.ff_down_bias = down.bias;
    return v;
  };
  ops::FluxDoubleBlockArgs a{};
  a.hidden = rows(x_, 0, t);
  a.cond = rows(cond_, 0, b_count);
  a.img = stream_weights(w.norm1, w.qkv, w.norm_q, w.norm_k, w.to_out, w.ff_up, w.ff_down);
  a.txt = stream_weights(w.norm1_context, w.add_qkv, w.norm_added_q, w.norm_added_k, w.to_add_out, w.ff_context_up,
                         w.ff_context_down);
  a.positions = rows(positions_, 0, t);
  a.cos_sin_cache = rows(cos_sin_, 0, s);
  a.cu_seqlens = rows(cu_seqlens_, 0, b_count + 1);
  a.mod = rows(mod_, 0, b_count);
  a.mod_txt = rows(mod_context_, 0, b_count);
  a.normed = rows(n_, 0, t);
  a.qkv = rows(qkv_, 0, t);
  a.attn = rows(y2_, 0, t);
  a.mlp = rows(mlp_, 0, t);
  a.act = rows(act_, 0, t);
  a.out = rows(y_, 0, t);
  a.num_heads = static_cast<int32_t>(config_.num_attention_heads);
  a.text_len = static_cast<int32_t>(text_len_);
  a.eps = static_cast<float>(config_.norm_eps);
  call_op(a, options_.device.type, stream);
}

// One flux_single_block call (an L3 op whose baseline is the sequence of registry ops
// the block is made of), so that a candidate may replace the whole block.
void FluxModel::single_block(const FluxSingleBlockWeights& w, void* stream) {
  const int64_t b_count = batch_, s = text_len_ + image_len_, t = b_count * s;
  ops::FluxSingleBlockArgs a{};
  a.hidden = rows(x_, 0, t);
  a.cond = rows(cond_, 0, b_count);
  a.norm_weight = w.norm.weight, a.norm_bias = w.norm.bias;
  a.qkv_weight = w.qkv.weight, a.qkv_bias = w.qkv.bias;
  a.norm_q = w.norm_q, a.norm_k = w.norm_k;
  a.mlp_weight = w.proj_mlp.weight, a.mlp_bias = w.proj_mlp.bias;
  a.out_weight = w.proj_out.weight, a.out_bias = w.proj_out.bias;
  a.positions = rows(positions_, 0, t);
  a.cos_sin_cache = rows(cos_sin_, 0, s);
  a.cu_seqlens = rows(cu_seqlens_, 0, b_count + 1);
  a.mod = rows(mod_single_, 0, b_count);
  a.normed = rows(n_, 0, t);
  a.qkv = rows(qkv_, 0, t);
  a.mlp = rows(mlp_, 0, t);
  a.cat = rows(cat_, 0, t);
  a.out = rows(y_, 0, t);
  a.num_heads = static_cast<int32_t>(config_.num_attention_heads);
  a.eps = static_cast<float>(config_.norm_eps);
  call_op(a, options_.device.type, stream);
}

void FluxModel::final_layer(void* stream) {
  const DeviceType be = options_.device.type;
  const int64_t b_count = batch_, h = config_.hidden();
  const float eps = static_cast<float>(config_.norm_eps);
  call_op(linear(cols(rows(mod_, 0, b_count), 0, 2 * h), rows(cond_, 0, b_count), weights_.norm_out), be, stream);
  for (int64_t b = 0; b < b_count; ++b) {
    // AdaLayerNormContinuous chunks its projection as (scale, shift).
    call_op(ops::AdaLnModulateArgs{image_rows(n_, b), image_rows(x_, b), chunk(mod_, b, 1, h), chunk(mod_, b, 0, h),
                                   eps},
            be, stream);
    call_op(linear(rows(out_, b * image_len_, image_len_), image_rows(n_, b), weights_.proj_out), be, stream);
  }
}

TensorView FluxModel::forward(const StepInputs& in, void* stream) {
  FK_CHECK(loaded_, "flux: forward before load");
  FK_CHECK(batch_ > 0, "flux: forward before plan");
  const DeviceType be = options_.device.type;
  const TensorView hs = step_input(in, "hidden_states", true, "flux");
  const TensorView ehs = step_input(in, "encoder_hidden_states", true, "flux");
  FK_CHECK(hs.rank == 2 && hs.shape[0] == batch_ * image_len_ && hs.shape[1] == config_.in_channels,
           "flux: hidden_states must be [", batch_ * image_len_, ", ", config_.in_channels, "] (B x Li packed latents as ",
           "planned), got ", describe(hs));
  FK_CHECK(ehs.rank == 2 && ehs.shape[0] == batch_ * text_len_ && ehs.shape[1] == config_.joint_attention_dim,
           "flux: encoder_hidden_states must be [", batch_ * text_len_, ", ", config_.joint_attention_dim,
           "] (B x Lt as planned), got ", describe(ehs));
  conditioning(in, stream);
  for (int64_t b = 0; b < batch_; ++b) {
    TensorView img = hs, txt = ehs;
    img.data = img.element_ptr(b * image_len_ * img.strides[0]);
    img.shape[0] = image_len_;
    txt.data = txt.element_ptr(b * text_len_ * txt.strides[0]);
    txt.shape[0] = text_len_;
    call_op(linear(image_rows(x_, b), img, weights_.x_embedder), be, stream);
    if (text_len_ > 0) call_op(linear(text_rows(x_, b), txt, weights_.context_embedder), be, stream);
  }
  for (const FluxDoubleBlockWeights& w : weights_.double_blocks) double_block(w, stream);
  for (const FluxSingleBlockWeights& w : weights_.single_blocks) single_block(w, stream);
  final_layer(stream);
  return rows(out_, 0, batch_ * image_len_);
}

}  // namespace fk::models::diffusion
