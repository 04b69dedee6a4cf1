#include "models/vision/convnextv2/convnextv2_model.h"

#include "fk/op_registry.h"
#include "fk/ops/conv.h"
#include "fk/ops/linear.h"
#include "fk/ops/norm.h"
#include "fk/status.h"
#include "models/vision/conv_call.h"
#include "models/vision/images_input.h"

namespace fk::models::vision {
namespace {

// The first n images of an NHWC buffer as [n * H * W, C] rows (or an [images, C] buffer's n rows).
TensorView convnextv2_rows(const Tensor& t, int64_t n) {
  TensorView v = t.view();
  const int64_t c = v.shape[v.rank - 1];
  int64_t rows = n;
  for (int d = 1; d + 1 < v.rank; ++d) rows *= v.shape[d];
  v.rank = 2;
  v.shape[0] = rows, v.shape[1] = c;
  v.strides[0] = c, v.strides[1] = 1;
  return v;
}

TensorView convnextv2_first(const Tensor& t, int64_t n) {
  TensorView v = t.view();
  v.shape[0] = n;
  return v;
}

void convnextv2_layer_norm(const TensorView& in, const TensorView& out, const Tensor& w, const Tensor& b, double eps,
                           DeviceType be, void* stream) {
  ops::LayerNormArgs a{};
  a.out = out;
  a.input = in;
  a.weight = w;
  a.bias = b;
  a.eps = static_cast<float>(eps);
  call_op(a, be, stream);
}

void convnextv2_linear(const TensorView& in, const TensorView& out, const Tensor& w, const Tensor& b, DeviceType be,
                       void* stream) {
  ops::LinearArgs a{};
  a.out = out;
  a.input = in;
  a.weight = w;
  a.bias = b;
  call_op(a, be, stream);
}

constexpr double kInnerEps = 1e-6;  // every LayerNorm inside the network (upstream hard-codes it)

}  // namespace

ConvNextV2Model::ConvNextV2Model(ConvNextV2Config config) : config_(std::move(config)) {}

std::unique_ptr<Model> ConvNextV2Model::from_config(std::string_view config_json, std::string_view source) {
  return std::make_unique<ConvNextV2Model>(parse_convnextv2_config(config_json, source));
}

ClassifierTransform ConvNextV2Model::transform() const {
  ClassifierTransform t;  // ConvNextImageProcessor's: bicubic, crop_pct 224 / 256 below 384
  t.size = config_.image_size;
  t.crop_pct = 224.0 / 256.0;
  t.squash = config_.image_size >= 384;
  return t;
}

std::vector<TensorDecl> ConvNextV2Model::weights() const { return convnextv2_weight_decls(config_); }

std::vector<TensorDecl> ConvNextV2Model::inputs() const {
  const int64_t s = config_.image_size;
  return {
      {"images", {kPerCall, s, s, 3}, options_.dtype, "RGB, normalised by the ImageNet mean and std, channels last"}};
}

std::vector<TensorDecl> ConvNextV2Model::outputs() const {
  return {{"logits", {kPerCall, config_.num_classes}, options_.dtype, "class logits (before softmax)"}};
}

void ConvNextV2Model::load(const LoadOptions& o) {
  FK_CHECK(o.dtype == DType::bf16 || o.dtype == DType::f16, "convnextv2: the model dtype must be bf16 or f16, got ",
           dtype_name(o.dtype));
  FK_CHECK(o.max_seqs > 0, "convnextv2: max_seqs (the images of a batch) must be positive");
  options_ = o;
  weights_ = o.checkpoint.empty() ? random_convnextv2_weights(config_, o.seed, o.dtype, o.device)
                                  : load_convnextv2_weights(config_, o.checkpoint, o.dtype, o.device);
  const int64_t n = o.max_seqs;
  auto buffer = [&](int64_t s, int64_t c) { return Tensor::empty({n, s, s, c}, o.dtype, o.device, o.stream); };
  embed_ = buffer(config_.stage_size(0), config_.hidden_sizes[0]);
  stages_.clear();
  for (int64_t i = 0; i < config_.stages(); ++i) {
    const int64_t s = config_.stage_size(i), c = config_.hidden_sizes[static_cast<size_t>(i)];
    StageBuffers b;
    b.x = buffer(s, c), b.a = buffer(s, c), b.b = buffer(s, c);
    b.wide = buffer(s, 4 * c), b.wide2 = buffer(s, 4 * c);
    b.scale = Tensor::empty({n, 4 * c}, DType::f32, o.device, o.stream);
    stages_.push_back(std::move(b));
  }
  const int64_t last = config_.hidden_sizes.back();
  pooled_ = Tensor::empty({n, last}, o.dtype, o.device, o.stream);
  pooled_norm_ = Tensor::empty({n, last}, o.dtype, o.device, o.stream);
  logits_ = Tensor::empty({n, config_.num_classes}, o.dtype, o.device, o.stream);
  loaded_ = true;
}

void ConvNextV2Model::plan(const StepInputs& in, void*) {
  FK_CHECK(loaded_, "convnextv2: plan before load");
  const TensorView images = images_input(in, config_.image_size, options_, "convnextv2");
  images_ = images.shape[0];
  input_ = images;
}

void ConvNextV2Model::block(const ConvNextV2Block& w, StageBuffers& s, void* stream) {
  const int64_t n = images_;
  ops::ConvNextV2BlockArgs a{};  // one L3 op, its parts inside; the stream updated in place
  a.out = a.input = convnextv2_first(s.x, n);
  a.dw_weight = w.dw_weight, a.dw_bias = w.dw_bias, a.ln_weight = w.ln_weight, a.ln_bias = w.ln_bias;
  a.pw1_weight = w.pw1_weight, a.pw1_bias = w.pw1_bias, a.grn_gamma = w.grn_gamma, a.grn_beta = w.grn_beta;
  a.pw2_weight = w.pw2_weight, a.pw2_bias = w.pw2_bias;
  a.dw_out = convnextv2_first(s.a, n), a.norm_out = convnextv2_first(s.b, n);
  a.mlp_out = convnextv2_first(s.wide, n), a.act_out = convnextv2_first(s.wide2, n);
  a.grn_scale = convnextv2_first(s.scale, n);
  call_op(a, options_.device.type, stream);
}

TensorView ConvNextV2Model::forward(const StepInputs&, void* stream) {
  FK_CHECK(loaded_ && images_ > 0, "convnextv2: forward before load and plan");
  const DeviceType be = options_.device.type;
  const int64_t n = images_;
  const int p = static_cast<int>(config_.patch_size);
  call_conv2d(weights_.patch_weight, weights_.patch_bias, p, 0, 1, ops::ConvActivation::none, input_,
              convnextv2_first(embed_, n), be, stream);
  convnextv2_layer_norm(convnextv2_rows(embed_, n), convnextv2_rows(stages_[0].x, n), weights_.embed_ln_weight,
                        weights_.embed_ln_bias, kInnerEps, be, stream);
  for (size_t i = 0; i < stages_.size(); ++i) {
    const ConvNextV2Stage& w = weights_.stages[i];
    if (i > 0) {  // LayerNorm of the last stage's output into its scratch, then the 2x2 stride-2 conv
      StageBuffers& prev = stages_[i - 1];
      convnextv2_layer_norm(convnextv2_rows(prev.x, n), convnextv2_rows(prev.a, n), w.down_ln_weight, w.down_ln_bias,
                            kInnerEps, be, stream);
      call_conv2d(w.down_weight, w.down_bias, 2, 0, 1, ops::ConvActivation::none, convnextv2_first(prev.a, n),
                  convnextv2_first(stages_[i].x, n), be, stream);
    }
    for (const ConvNextV2Block& b : w.blocks) block(b, stages_[i], stream);
  }
  ops::GlobalAvgPoolArgs pool{};
  pool.out = convnextv2_first(pooled_, n);
  pool.input = convnextv2_first(stages_.back().x, n);
  call_op(pool, be, stream);
  convnextv2_layer_norm(convnextv2_first(pooled_, n), convnextv2_first(pooled_norm_, n), weights_.final_ln_weight,
                        weights_.final_ln_bias, config_.layer_norm_eps, be, stream);
  convnextv2_linear(convnextv2_first(pooled_norm_, n), convnextv2_first(logits_, n), weights_.classifier_weight,
                    weights_.classifier_bias, be, stream);
  return convnextv2_first(logits_, n);
}

TensorView ConvNextV2Model::pooled_output() const { return convnextv2_first(pooled_norm_, images_); }

}  // namespace fk::models::vision
