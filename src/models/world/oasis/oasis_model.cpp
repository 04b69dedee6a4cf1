#include "models/world/oasis/oasis_model.h"

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
#include "ops/common/views.h"

namespace fk::models::world {
namespace {

namespace views = ops::views;

// Rows [first, first + n) of a tensor's leading dimension.
TensorView rows(const Tensor& t, int64_t first, int64_t n) {
  TensorView v = t.view();
  v.data = v.element_ptr(first * v.strides[0]);
  v.shape[0] = n;
  return v;
}

// Chunk k of width h of every row of a [F, k_max * h] modulation matrix: [F, h].
TensorView chunk(const Tensor& mod, int64_t frames, int64_t k, int64_t h) {
  return views::columns(rows(mod, 0, frames), k * h, h);
}

ops::LinearArgs linear(const TensorView& out, const TensorView& in, const OasisLinear& w) {
  return ops::LinearArgs{out,          in,          w.weight, w.bias.defined() ? w.bias.view() : TensorView{},
                         TensorView{}, TensorView{}};
}

// linspace(lo, hi, n)[i] as torch computes it in float32 (n == 1: lo).
float linspace_at(float lo, float hi, int64_t n, int64_t i) {
  if (n == 1) return lo;
  return static_cast<float>(lo + (static_cast<double>(hi) - lo) * static_cast<double>(i) / static_cast<double>(n - 1));
}

// One row of a RoPE table: pair k turns by angle[k]; the row is [cos | sin] of the angles.
void rope_row(const std::vector<float>& angles, float* row) {
  const size_t half = angles.size();
  for (size_t k = 0; k < half; ++k) {
    row[k] = static_cast<float>(std::cos(static_cast<double>(angles[k])));
    row[half + k] = static_cast<float>(std::sin(static_cast<double>(angles[k])));
  }
}

}  // namespace

OasisModel::OasisModel(OasisConfig config) : config_(std::move(config)) {}

std::unique_ptr<Model> OasisModel::from_config(std::string_view config_json, std::string_view source) {
  return std::make_unique<OasisModel>(parse_oasis_config(config_json, source));
}

std::vector<TensorDecl> OasisModel::weights() const { return oasis_weight_decls(config_, options_.dtype); }

std::vector<TensorDecl> OasisModel::inputs() const {
  const DType dt = options_.dtype;
  std::vector<TensorDecl> d = {
      {"x",
       {kPerCall, config_.patch_features()},
       dt,
       "noisy latent patches: B clips x T frames x S patches, each patch's (channel, row, column) values"},
      {"timestep", {kPerCall, kPerCall}, DType::f32, "[B, T] noise level of each frame, on the host"}};
  if (config_.external_cond_dim > 0)
    d.push_back({"external_cond", {kPerCall, config_.external_cond_dim}, dt, "each frame's action vector (optional)"});
  return d;
}

std::vector<TensorDecl> OasisModel::outputs() const {
  return {{"sample",
           {kPerCall, config_.patch_features()},
           options_.dtype,
           "the prediction per patch, in x's (channel, row, column) order"}};
}

void OasisModel::load(const LoadOptions& o) {
  FK_CHECK(o.dtype == DType::bf16 || o.dtype == DType::f16, "oasis: the model dtype must be bf16 or f16, got ",
           dtype_name(o.dtype));
  FK_CHECK(o.max_tokens > 0 && o.max_seqs > 0, "oasis: max_tokens and max_seqs must be positive");
  options_ = o;
  weights_ = o.checkpoint.empty() ? random_oasis_weights(config_, o.dtype, o.device, o.seed, o.stream)
                                  : load_oasis_weights(config_, o.checkpoint, o.dtype, o.device);
  const int64_t n = o.max_tokens, f = o.max_seqs, h = config_.hidden_size, m = config_.mlp_hidden();
  const int64_t s = config_.frame_tokens(), d = config_.head_dim();
  auto buffer = [&](const Shape& shape, DType dt) { return Tensor::empty(shape, dt, o.device, o.stream); };
  x_ = buffer({n, h}, o.dtype);
  n_ = buffer({n, h}, o.dtype);
  qkv_ = buffer({n, 3 * h}, o.dtype);
  qkv_t_ = buffer({n, 3 * h}, o.dtype);
  attn_ = buffer({n, h}, o.dtype);
  attn_t_ = buffer({n, h}, o.dtype);
  y_ = buffer({n, h}, o.dtype);
  mlp_ = buffer({n, m}, o.dtype);
  act_ = buffer({n, m}, o.dtype);
  out_ = buffer({n, config_.patch_features()}, o.dtype);
  mod_ = buffer({f, 6 * h}, o.dtype);
  t_proj_ = buffer({f, config_.timestep_channels}, o.dtype);
  c1_ = buffer({f, h}, o.dtype);
  c2_ = buffer({f, h}, o.dtype);
  temb_ = buffer({f, h}, o.dtype);
  cond_ = buffer({f, h}, o.dtype);
  spatial_positions_ = buffer({n}, DType::i32);
  temporal_positions_ = buffer({n}, DType::i32);
  spatial_cu_ = buffer({f + 1}, DType::i32);
  temporal_cu_ = buffer({n + 1}, DType::i32);  // B S sequences: at most n (one frame each)
  spatial_cos_sin_ = buffer({s, d}, DType::f32);
  temporal_cos_sin_ = buffer({config_.max_frames, d}, DType::f32);

  // The RoPE tables depend on the config alone. Spatial (rotary_embedding_torch's "pixel"
  // frequencies, max_freq 256, over D/2 dims): pair k < D/4 turns by the row's position in
  // linspace(-1, 1, h) times freq_k, pair D/4 + k by the column's; freq_k =
  // linspace(1, 128, D/4)[k] pi. Temporal ("lang" frequencies over D dims): pair k turns by
  // the frame index times 10000^(-2k/D). Angles are products of float32 values, as upstream
  // computes them.
  const int64_t gh = config_.grid_h(), gw = config_.grid_w(), quarter = d / 4, half = d / 2;
  std::vector<float> spatial(static_cast<size_t>(s * d)), angles(static_cast<size_t>(half));
  const float pi = static_cast<float>(M_PI);
  for (int64_t i = 0; i < gh; ++i)
    for (int64_t j = 0; j < gw; ++j) {
      const float pos_i = linspace_at(-1.f, 1.f, gh, i), pos_j = linspace_at(-1.f, 1.f, gw, j);
      for (int64_t k = 0; k < quarter; ++k) {
        const float freq = linspace_at(1.f, 128.f, quarter, k) * pi;
        angles[static_cast<size_t>(k)] = pos_i * freq;
        angles[static_cast<size_t>(quarter + k)] = pos_j * freq;
      }
      rope_row(angles, spatial.data() + (i * gw + j) * d);
    }
  std::vector<float> temporal(static_cast<size_t>(config_.max_frames * d));
  for (int64_t t = 0; t < config_.max_frames; ++t) {
    for (int64_t k = 0; k < half; ++k) {
      const float exponent = static_cast<float>(2 * k) / static_cast<float>(d);
      const float freq = 1.f / std::pow(10000.f, exponent);
      angles[static_cast<size_t>(k)] = static_cast<float>(t) * freq;
    }
    rope_row(angles, temporal.data() + t * d);
  }
  upload_to(spatial_cos_sin_, spatial.data(), spatial.size() * sizeof(float), o.stream, "oasis");
  upload_to(temporal_cos_sin_, temporal.data(), temporal.size() * sizeof(float), o.stream, "oasis");
  if (o.device.is_cuda()) rt::stream_synchronize(o.stream);  // the host tables go out of scope
  clips_ = frames_ = 0;
  loaded_ = true;
}

void OasisModel::plan(const StepInputs& in, void* stream) {
  FK_CHECK(loaded_, "oasis: plan before load");
  const TensorView ts = step_input(in, "timestep", true, "oasis");
  FK_CHECK(ts.device.is_cpu() && ts.dtype == DType::f32 && ts.rank == 2 && ts.is_contiguous(),
           "oasis: timestep must be a contiguous [B, T] f32 tensor on the host, got ", describe(ts));
  const int64_t b = ts.shape[0], t = ts.shape[1], s = config_.frame_tokens();
  FK_CHECK(b >= 1 && t >= 1, "oasis: timestep [", b, ", ", t, "] names no frame");
  FK_CHECK(t <= config_.max_frames, "oasis: ", t, " frames, more than the model's max_frames ", config_.max_frames,
           " (its temporal RoPE table)");
  FK_CHECK(b * t <= options_.max_seqs && b * t * s <= options_.max_tokens, "oasis: ", b, " clips of ", t,
           " frames are ", b * t * s, " tokens, more than the ", options_.max_tokens, " tokens / ", options_.max_seqs,
           " frames the model was loaded for (max_tokens / max_seqs)");
  clips_ = b, frames_ = t;

  // TimestepEmbedder.timestep_embedding: [cos(t f_k) | sin(t f_k)], f_k = exp(-ln(10000) k / half)
  // in float32, the projection rounded once to the model dtype.
  const DType dt = options_.dtype;
  const int64_t tc = config_.timestep_channels, half = tc / 2, frames = b * t;
  const float* tv = static_cast<const float*>(ts.data);
  std::vector<char> proj(static_cast<size_t>(frames * tc) * dtype_size(dt));
  for (int64_t f = 0; f < frames; ++f) {
    FK_CHECK(std::isfinite(tv[f]), "oasis: timestep ", tv[f], " of frame ", f % t, " of clip ", f / t,
             " is not finite");
    for (int64_t k = 0; k < half; ++k) {
      const float freq = std::exp(-std::log(10000.f) * static_cast<float>(k) / static_cast<float>(half));
      const double arg = static_cast<double>(tv[f] * freq);
      char* row = proj.data() + static_cast<size_t>(f * tc) * dtype_size(dt);
      store_element(row + static_cast<size_t>(k) * dtype_size(dt), dt, std::cos(arg));
      store_element(row + static_cast<size_t>(half + k) * dtype_size(dt), dt, std::sin(arg));
    }
  }
  upload_to(t_proj_, proj.data(), proj.size(), stream, "oasis");

  // Frame-major tokens (clip, frame, position) read spatial RoPE row `position`; the
  // position-major copy (clip, position, frame) reads temporal row `frame`.
  const int64_t n = frames * s;
  std::vector<int32_t> sp(static_cast<size_t>(n)), tp(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    sp[static_cast<size_t>(i)] = static_cast<int32_t>(i % s);
    tp[static_cast<size_t>(i)] = static_cast<int32_t>(i % t);
  }
  std::vector<int32_t> scu(static_cast<size_t>(frames + 1)), tcu(static_cast<size_t>(b * s + 1));
  for (int64_t i = 0; i <= frames; ++i) scu[static_cast<size_t>(i)] = static_cast<int32_t>(i * s);
  for (int64_t i = 0; i <= b * s; ++i) tcu[static_cast<size_t>(i)] = static_cast<int32_t>(i * t);
  upload_to(spatial_positions_, sp.data(), sp.size() * sizeof(int32_t), stream, "oasis");
  upload_to(temporal_positions_, tp.data(), tp.size() * sizeof(int32_t), stream, "oasis");
  upload_to(spatial_cu_, scu.data(), scu.size() * sizeof(int32_t), stream, "oasis");
  upload_to(temporal_cu_, tcu.data(), tcu.size() * sizeof(int32_t), stream, "oasis");
}

void OasisModel::conditioning(const StepInputs& in, void* stream) {
  const DeviceType be = options_.device.type;
  const int64_t f = clips_ * frames_;
  // TimestepEmbedder: mlp.2(silu(mlp.0(projection))).
  call_op(linear(rows(c1_, 0, f), rows(t_proj_, 0, f), weights_.t_1), be, stream);
  call_op(ops::SiluArgs{rows(c2_, 0, f), rows(c1_, 0, f)}, be, stream);
  call_op(linear(rows(temb_, 0, f), rows(c2_, 0, f), weights_.t_2), be, stream);
  const TensorView action = step_input(in, "external_cond", false, "oasis");
  if (action.data != nullptr) {
    FK_CHECK(config_.external_cond_dim > 0, "oasis: external_cond given, but the model has no external_cond layer");
    FK_CHECK(action.rank == 2 && action.shape[0] == f && action.shape[1] == config_.external_cond_dim,
             "oasis: external_cond must be [", f, ", ", config_.external_cond_dim, "] (one action per frame), got ",
             describe(action));
    call_op(linear(rows(c1_, 0, f), action, weights_.external_cond), be, stream);
    call_op(ops::AddArgs{rows(temb_, 0, f), rows(temb_, 0, f), rows(c1_, 0, f)}, be, stream);
  }
  // Every adaLN_modulation starts with SiLU of the same vector: once per step.
  call_op(ops::SiluArgs{rows(cond_, 0, f), rows(temb_, 0, f)}, be, stream);
}

namespace {

ops::OasisHalfWeights half_weights(const OasisHalfBlockWeights& w) {
  ops::OasisHalfWeights v{};
  v.mod_weight = w.modulation.weight, v.mod_bias = w.modulation.bias;
  v.qkv_weight = w.qkv.weight;
  v.out_weight = w.out.weight, v.out_bias = w.out.bias;
  v.fc1_weight = w.fc1.weight, v.fc1_bias = w.fc1.bias;
  v.fc2_weight = w.fc2.weight, v.fc2_bias = w.fc2.bias;
  return v;
}

}  // namespace

// One oasis_block call (an L3 op whose baseline is the sequence of registry ops the block is
// made of: per half adaLN, QKV, RoPE, attention (the temporal one in position-major order),
// the gated output and MLP), so that a candidate may replace the whole block.
void OasisModel::block(const OasisBlockWeights& w, void* stream) {
  const int64_t f = clips_ * frames_, n = f * config_.frame_tokens(), s = config_.frame_tokens();
  ops::OasisBlockArgs a{};
  a.hidden = rows(x_, 0, n);
  a.cond = rows(cond_, 0, f);
  a.spatial = half_weights(w.spatial);
  a.temporal = half_weights(w.temporal);
  a.spatial_positions = rows(spatial_positions_, 0, n);
  a.temporal_positions = rows(temporal_positions_, 0, n);
  a.spatial_cos_sin = spatial_cos_sin_.view();
  a.temporal_cos_sin = rows(temporal_cos_sin_, 0, frames_);
  a.spatial_cu_seqlens = rows(spatial_cu_, 0, f + 1);
  a.temporal_cu_seqlens = rows(temporal_cu_, 0, clips_ * s + 1);
  a.mod = rows(mod_, 0, f);
  a.normed = rows(n_, 0, n);
  a.qkv = rows(qkv_, 0, n);
  a.qkv_t = rows(qkv_t_, 0, n);
  a.attn = rows(attn_, 0, n);
  a.attn_t = rows(attn_t_, 0, n);
  a.mlp = rows(mlp_, 0, n);
  a.act = rows(act_, 0, n);
  a.out = rows(y_, 0, n);
  a.num_heads = static_cast<int32_t>(config_.num_heads);
  a.frames = static_cast<int32_t>(frames_);
  a.eps = static_cast<float>(config_.norm_eps);
  call_op(a, options_.device.type, stream);
}

void OasisModel::final_layer(void* stream) {
  const DeviceType be = options_.device.type;
  const int64_t h = config_.hidden_size, f = clips_ * frames_, n = f * config_.frame_tokens();
  call_op(linear(views::columns(rows(mod_, 0, f), 0, 2 * h), rows(cond_, 0, f), weights_.final_modulation), be, stream);
  call_op(ops::AdaLnModulateArgs{rows(n_, 0, n), rows(x_, 0, n), chunk(mod_, f, 0, h), chunk(mod_, f, 1, h),
                                 static_cast<float>(config_.norm_eps)},
          be, stream);
  call_op(linear(rows(out_, 0, n), rows(n_, 0, n), weights_.final_linear), be, stream);
}

TensorView OasisModel::forward(const StepInputs& in, void* stream) {
  FK_CHECK(loaded_, "oasis: forward before load");
  FK_CHECK(clips_ > 0, "oasis: forward before plan");
  const int64_t n = clips_ * frames_ * config_.frame_tokens();
  const TensorView x = step_input(in, "x", true, "oasis");
  FK_CHECK(x.rank == 2 && x.shape[0] == n && x.shape[1] == config_.patch_features(), "oasis: x must be [", n, ", ",
           config_.patch_features(), "] (", clips_, " clips x ", frames_, " frames x ", config_.frame_tokens(),
           " patches as planned), got ", describe(x));
  conditioning(in, stream);
  call_op(linear(rows(x_, 0, n), x, weights_.x_embedder), options_.device.type, stream);
  for (const OasisBlockWeights& b : weights_.blocks) block(b, stream);
  final_layer(stream);
  return rows(out_, 0, n);
}

}  // namespace fk::models::world
