#include "models/vision/mobilenetv4/mobilenetv4_model.h"

#include "fk/op_registry.h"
#include "fk/ops/conv.h"
#include "fk/ops/linear.h"
#include "fk/status.h"
#include "models/vision/conv_call.h"
#include "models/vision/images_input.h"
#include "ops/conv/conv_validate.h"

namespace fk::models::vision {
namespace {

// The mnv4_first n images of an [images, ...] buffer.
TensorView mnv4_first(const Tensor& t, int64_t n) {
  TensorView v = t.view();
  v.shape[0] = n;
  return v;
}

void mnv4_conv(const MobileNetV4Conv& c, const TensorView& in, const TensorView& out, DeviceType be, void* stream,
               const TensorView& residual = TensorView{}) {
  call_conv2d(c.weight, c.bias, c.stride, c.pad, c.groups,
              c.relu ? ops::ConvActivation::relu : ops::ConvActivation::none, in, out, be, stream, residual);
}

}  // namespace

MobileNetV4Model::MobileNetV4Model(MobileNetV4Config config) : config_(std::move(config)) {}

std::unique_ptr<Model> MobileNetV4Model::from_config(std::string_view config_json, std::string_view source) {
  return std::make_unique<MobileNetV4Model>(parse_mobilenetv4_config(config_json, source));
}

ClassifierTransform MobileNetV4Model::transform() const {
  ClassifierTransform t;  // timm's: bicubic, ImageNet's mean and std
  t.size = config_.image_size;
  t.crop_pct = config_.crop_pct;
  return t;
}

std::vector<TensorDecl> MobileNetV4Model::weights() const { return mobilenetv4_weight_decls(config_); }

std::vector<TensorDecl> MobileNetV4Model::inputs() const {
  const int64_t s = config_.image_size;
  return {{"images",
           {kPerCall, s, s, 3},
           options_.dtype,
           "RGB, normalised by the ImageNet mean and std (timm's data config), channels last"}};
}

std::vector<TensorDecl> MobileNetV4Model::outputs() const {
  return {{"logits", {kPerCall, config_.num_classes}, options_.dtype, "class logits (before softmax)"}};
}

Tensor MobileNetV4Model::buffer(int64_t size, int64_t channels) const {
  return Tensor::empty({options_.max_seqs, size, size, channels}, options_.dtype, options_.device, options_.stream);
}

void MobileNetV4Model::load(const LoadOptions& o) {
  FK_CHECK(o.dtype == DType::bf16 || o.dtype == DType::f16, "mobilenetv4: the model dtype must be bf16 or f16, got ",
           dtype_name(o.dtype));
  FK_CHECK(o.max_seqs > 0, "mobilenetv4: max_seqs (the images of a batch) must be positive");
  options_ = o;
  weights_ = o.checkpoint.empty() ? random_mobilenetv4_weights(config_, o.seed, o.dtype, o.device)
                                  : load_mobilenetv4_weights(config_, o.checkpoint, o.dtype, o.device);
  int64_t size = config_.stem_size();
  stem_ = buffer(size, config_.stem_channels);
  outs_.clear();
  for (const std::vector<MobileNetV4Conv>& convs : weights_.blocks) {
    std::vector<Tensor> outs;
    for (const MobileNetV4Conv& c : convs) {
      size = ops::conv_out_size(size, c.kernel, c.stride, c.pad, 1);
      outs.push_back(buffer(size, c.c_out));
    }
    outs_.push_back(std::move(outs));
  }
  const int64_t n = o.max_seqs;
  pooled_ = Tensor::empty({n, config_.last_channels()}, o.dtype, o.device, o.stream);
  head_ = Tensor::empty({n, 1, 1, config_.num_features}, o.dtype, o.device, o.stream);
  logits_ = Tensor::empty({n, config_.num_classes}, o.dtype, o.device, o.stream);
  loaded_ = true;
}

void MobileNetV4Model::plan(const StepInputs& in, void*) {
  FK_CHECK(loaded_, "mobilenetv4: plan before load");
  const TensorView images = images_input(in, config_.image_size, options_, "mobilenetv4");
  images_ = images.shape[0];
  input_ = images;
}

TensorView MobileNetV4Model::forward(const StepInputs&, void* stream) {
  FK_CHECK(loaded_ && images_ > 0, "mobilenetv4: forward before load and plan");
  const DeviceType be = options_.device.type;
  const int64_t n = images_;
  mnv4_conv(weights_.stem, input_, mnv4_first(stem_, n), be, stream);
  TensorView x = mnv4_first(stem_, n);
  for (size_t i = 0; i < config_.blocks.size(); ++i) {
    const std::vector<MobileNetV4Conv>& convs = weights_.blocks[i];
    const std::vector<Tensor>& outs = outs_[i];
    if (config_.blocks[i].kind == MobileNetV4BlockKind::uir) {  // one L3 op, its conv2d calls inside
      x = uir_block(config_.blocks[i], convs, outs, x, stream);
      continue;
    }
    TensorView y = x;
    for (size_t j = 0; j < convs.size(); ++j) {
      const bool last = j + 1 == convs.size();
      const TensorView out = mnv4_first(outs[j], n);
      mnv4_conv(convs[j], y, out, be, stream, last && config_.blocks[i].residual ? x : TensorView{});
      y = out;
    }
    x = y;
  }
  ops::GlobalAvgPoolArgs pool{};
  pool.out = mnv4_first(pooled_, n);
  pool.input = x;
  call_op(pool, be, stream);
  // conv_head over the pooled features as a 1x1 image: [n, 1, 1, C] -> [n, 1, 1, F].
  TensorView pooled4 = pool.out;
  pooled4.rank = 4;
  pooled4.shape[1] = pooled4.shape[2] = 1, pooled4.shape[3] = config_.last_channels();
  pooled4.strides[3] = 1, pooled4.strides[2] = pooled4.strides[1] = config_.last_channels();
  pooled4.strides[0] = config_.last_channels();
  mnv4_conv(weights_.head, pooled4, mnv4_first(head_, n), be, stream);
  TensorView features = mnv4_first(head_, n);
  features.rank = 2;
  features.shape[1] = config_.num_features;
  features.strides[0] = config_.num_features, features.strides[1] = 1;
  ops::LinearArgs fc{};
  fc.out = mnv4_first(logits_, n);
  fc.input = features;
  fc.weight = weights_.classifier_weight;
  fc.bias = weights_.classifier_bias;
  call_op(fc, be, stream);
  return fc.out;
}

TensorView MobileNetV4Model::uir_block(const MobileNetV4Block& block, const std::vector<MobileNetV4Conv>& convs,
                                       const std::vector<Tensor>& outs, const TensorView& x, void* stream) {
  // convs and outs: [dw_start?, pw_exp, dw_mid?, pw_proj] (mobilenetv4_weights.h).
  const int64_t n = images_;
  size_t j = 0;
  ops::UirBlockArgs a{};
  a.input = x;
  if (block.dw_start) {
    a.start_weight = convs[j].weight, a.start_bias = convs[j].bias, a.start_out = mnv4_first(outs[j], n);
    ++j;
  }
  a.expand_weight = convs[j].weight, a.expand_bias = convs[j].bias, a.expand_out = mnv4_first(outs[j], n);
  ++j;
  if (block.dw_mid) {
    a.mid_weight = convs[j].weight, a.mid_bias = convs[j].bias, a.mid_out = mnv4_first(outs[j], n);
    ++j;
  }
  a.project_weight = convs[j].weight, a.project_bias = convs[j].bias, a.out = mnv4_first(outs[j], n);
  a.stride = block.stride;
  a.residual = block.residual ? 1 : 0;
  call_op(a, options_.device.type, stream);
  return a.out;
}

TensorView MobileNetV4Model::pooled_output() const { return mnv4_first(pooled_, images_); }

TensorView MobileNetV4Model::block_output(int index) const {
  FK_CHECK(index >= 0 && index < static_cast<int>(outs_.size()), "mobilenetv4: no block ", index);
  return mnv4_first(outs_[static_cast<size_t>(index)].back(), images_);
}

}  // namespace fk::models::vision
