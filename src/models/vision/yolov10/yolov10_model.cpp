#include "models/vision/yolov10/yolov10_model.h"

#include <cmath>

#include "fk/op_registry.h"
#include "fk/ops/conv.h"
#include "fk/ops/detect.h"
#include "fk/ops/varlen_attention.h"
#include "fk/ops/yolo.h"
#include "fk/status.h"
#include "models/vision/conv_call.h"
#include "models/vision/images_input.h"
#include "models/vision/yolov10/yolov10_detect.h"

namespace fk::models::vision {
namespace {

using B = Yolov10Block;

// Channels [c0, c0 + count) of the first n images of an [images, H, W, C] buffer.
TensorView nhwc(const Tensor& t, int64_t n, int64_t c0 = 0, int64_t count = -1) {
  TensorView v = t.view();
  v.shape[0] = n;
  v.data = static_cast<char*>(v.data) + c0 * v.element_size();
  v.shape[3] = count < 0 ? v.shape[3] - c0 : count;
  return v;
}

// The [n, g, g, count] grid of one detection level inside raw [images, A, no]: anchors
// [a0, a0 + g * g), channels [c0, c0 + count).
TensorView level_view(const Tensor& raw, int64_t n, int64_t a0, int64_t g, int64_t c0, int64_t count) {
  const TensorView r = raw.view();
  const int64_t a = r.shape[1], no = r.shape[2];
  TensorView v = r;
  v.rank = 4;
  v.data = static_cast<char*>(r.data) + (a0 * no + c0) * r.element_size();
  v.shape[0] = n, v.shape[1] = g, v.shape[2] = g, v.shape[3] = count;
  v.strides[0] = a * no, v.strides[1] = g * no, v.strides[2] = no, v.strides[3] = 1;
  return v;
}

// [tokens, heads, d] view of channels [c0, c0 + heads * d) of an NHWC buffer.
TensorView heads_view(const TensorView& x, int64_t c0, int64_t heads, int64_t d) {
  TensorView v = x;
  const int64_t row = x.strides[2];
  v.rank = 3;
  v.data = static_cast<char*>(x.data) + c0 * x.element_size();
  v.shape[0] = x.shape[0] * x.shape[1] * x.shape[2], v.shape[1] = heads, v.shape[2] = d;
  v.strides[0] = row, v.strides[1] = d, v.strides[2] = 1;
  return v;
}

void conv(const Yolov10Conv& c, const TensorView& in, const TensorView& out, DeviceType be, void* stream,
          const TensorView& residual = TensorView{}) {
  call_conv2d(c.weight, c.bias, c.stride, c.pad, c.groups,
              c.silu ? ops::ConvActivation::silu : ops::ConvActivation::none, in, out, be, stream, residual);
}

}  // namespace

Yolov10Model::Yolov10Model(Yolov10Config config) : config_(std::move(config)) {}

std::unique_ptr<Model> Yolov10Model::from_config(std::string_view config_json, std::string_view source) {
  return std::make_unique<Yolov10Model>(parse_yolov10_config(config_json, source));
}

std::vector<TensorDecl> Yolov10Model::weights() const { return yolov10_weight_decls(config_); }

std::vector<TensorDecl> Yolov10Model::inputs() const {
  const int64_t s = config_.imgsz;
  return {{"images", {kPerCall, s, s, 3}, options_.dtype, "RGB in [0, 1] (letterboxed / 255), channels last"}};
}

std::vector<TensorDecl> Yolov10Model::outputs() const {
  return {{"raw", {kPerCall, config_.anchors(), config_.outputs_per_anchor()}, options_.dtype,
           "one-to-one head per anchor (P3, P4, P5 grids row-major): 4 x reg_max DFL logits (left, top, right, "
           "bottom), then nc class logits"},
          {"boxes", {kPerCall, config_.anchors(), 4}, DType::f32, "dfl_box_decode: xyxy boxes in input pixels"},
          {"scores", {kPerCall, config_.anchors(), config_.nc}, DType::f32, "dfl_box_decode: sigmoid class scores"}};
}

void Yolov10Model::load(const LoadOptions& o) {
  FK_CHECK(o.dtype == DType::bf16 || o.dtype == DType::f16, "yolov10: the model dtype must be bf16 or f16, got ",
           dtype_name(o.dtype));
  FK_CHECK(o.max_seqs > 0, "yolov10: max_seqs (the images of a batch) must be positive");
  options_ = o;
  weights_ = o.checkpoint.empty() ? random_yolov10_weights(config_, o.seed, o.dtype, o.device)
                                  : load_yolov10_weights(config_, o.checkpoint, o.dtype, o.device);
  const int64_t n = o.max_seqs;
  auto buffer = [&](int64_t stride_px, int64_t c) {
    const int64_t g = config_.imgsz / stride_px;
    return Tensor::empty({n, g, g, c}, o.dtype, o.device, o.stream);
  };
  buffers_.assign(config_.layers.size(), LayerBuffers{});
  for (const Yolov10Layer& l : config_.layers) {
    LayerBuffers& b = buffers_[static_cast<size_t>(l.index)];
    const int64_t s = l.stride_px, h = l.c_out / 2;
    const int64_t in_stride = l.index == 0 ? 1 : config_.layers[static_cast<size_t>(l.from[0])].stride_px;
    if (l.kind != B::detect) b.out = buffer(s, l.c_out);
    switch (l.kind) {
      case B::scdown:  // cv1's output at the input resolution
        b.temps = {buffer(in_stride, l.c_out)};
        break;
      case B::c2f:  // the concatenation, a bottleneck's middle
        b.temps = {buffer(s, (2 + l.repeats) * h), buffer(s, h)};
        break;
      case B::c2f_cib:  // the concatenation, a CIB's four intermediates
        b.temps = {buffer(s, (2 + l.repeats) * h), buffer(s, h), buffer(s, 2 * h), buffer(s, 2 * h), buffer(s, h)};
        break;
      case B::sppf:
        b.temps = {buffer(s, 4 * (l.c_in / 2))};
        break;
      case B::psa: {  // [a | b], qkv, attention output, pe + attention, b + attn, ffn middle
        const Yolov10Attention a = yolov10_attention(config_);
        b.temps = {buffer(s, 2 * a.dim), buffer(s, 3 * a.heads * a.head_dim), buffer(s, a.dim), buffer(s, a.dim),
                   buffer(s, a.dim), buffer(s, 2 * a.dim)};
        const int64_t g = config_.imgsz / s;
        Tensor cu = Tensor::empty({n + 1}, DType::i32);
        for (int64_t i = 0; i <= n; ++i) cu.data_as<int32_t>()[i] = static_cast<int32_t>(i * g * g);
        cu_seqlens_ = o.device.is_cpu() ? cu : cu.to(o.device);
        break;
      }
      case B::detect: {  // per level: box middles (2), class middles (4)
        const std::vector<int64_t> ch = config_.detect_channels();
        for (size_t lv = 0; lv < ch.size(); ++lv) {
          const int64_t st = config_.layers[static_cast<size_t>(l.from[lv])].stride_px;
          for (int64_t c : {config_.box_channels(), config_.box_channels(), ch[lv], config_.cls_channels(),
                            config_.cls_channels(), config_.cls_channels()})
            b.temps.push_back(buffer(st, c));
        }
        break;
      }
      default:
        break;
    }
  }
  raw_ = Tensor::empty({n, config_.anchors(), config_.outputs_per_anchor()}, o.dtype, o.device, o.stream);
  const Tensor anchors = yolov10_anchors(config_);
  anchors_ = o.device.is_cpu() ? anchors : anchors.to(o.device);
  boxes_ = Tensor::empty({n, config_.anchors(), 4}, DType::f32, o.device, o.stream);
  scores_ = Tensor::empty({n, config_.anchors(), config_.nc}, DType::f32, o.device, o.stream);
  loaded_ = true;
}

void Yolov10Model::plan(const StepInputs& in, void*) {
  FK_CHECK(loaded_, "yolov10: plan before load");
  const TensorView images = images_input(in, config_.imgsz, options_, "yolov10");
  images_ = images.shape[0];
  input_ = images;
}

TensorView Yolov10Model::layer_output(int index) const {
  FK_CHECK(index >= 0 && index + 1 < static_cast<int>(buffers_.size()), "yolov10: no layer ", index);
  return nhwc(buffers_[static_cast<size_t>(index)].out, images_);
}

void Yolov10Model::run_layer(const Yolov10Layer& l, void* stream) {
  const DeviceType be = options_.device.type;
  const int64_t n = images_;
  LayerBuffers& b = buffers_[static_cast<size_t>(l.index)];
  const std::vector<Yolov10Conv>& w = weights_.layers[static_cast<size_t>(l.index)].convs;
  const TensorView x = l.index == 0 ? input_ : nhwc(buffers_[static_cast<size_t>(l.from[0])].out, n);
  const TensorView out = l.kind == B::detect ? TensorView{} : nhwc(b.out, n);
  const int64_t h = l.c_out / 2;
  switch (l.kind) {
    case B::conv:
      conv(w[0], x, out, be, stream);
      break;
    case B::scdown:
      conv(w[0], x, nhwc(b.temps[0], n), be, stream);
      conv(w[1], nhwc(b.temps[0], n), out, be, stream);
      break;
    case B::c2f: {  // the L3 op: its baseline calls conv2d as the C2fCIB branch below does
      ops::Yolov10C2fArgs c{};
      c.out = out;
      c.input = x;
      c.cv1_weight = w[0].weight, c.cv1_bias = w[0].bias;
      c.cv2_weight = w[1].weight, c.cv2_bias = w[1].bias;
      for (size_t j = 0; j + 2 < w.size(); ++j) c.m_weight[j] = w[2 + j].weight, c.m_bias[j] = w[2 + j].bias;
      c.concat = nhwc(b.temps[0], n);
      c.mid = nhwc(b.temps[1], n);
      c.num_bottlenecks = static_cast<int32_t>(l.repeats);
      c.shortcut = l.shortcut ? 1 : 0;
      call_op(c, be, stream);
      break;
    }
    case B::c2f_cib: {
      const Tensor& y = b.temps[0];
      conv(w[0], x, nhwc(y, n, 0, 2 * h), be, stream);
      const size_t per = l.kind == B::c2f ? 2 : 5;
      for (int64_t j = 0; j < l.repeats; ++j) {
        const TensorView in = nhwc(y, n, (1 + j) * h, h), res = l.shortcut ? in : TensorView{};
        const TensorView dst = nhwc(y, n, (2 + j) * h, h);
        const Yolov10Conv* m = &w[2 + static_cast<size_t>(j) * per];
        if (l.kind == B::c2f) {
          conv(m[0], in, nhwc(b.temps[1], n), be, stream);
          conv(m[1], nhwc(b.temps[1], n), dst, be, stream, res);
        } else {
          conv(m[0], in, nhwc(b.temps[1], n), be, stream);
          conv(m[1], nhwc(b.temps[1], n), nhwc(b.temps[2], n), be, stream);
          conv(m[2], nhwc(b.temps[2], n), nhwc(b.temps[3], n), be, stream);
          conv(m[3], nhwc(b.temps[3], n), nhwc(b.temps[4], n), be, stream);
          conv(m[4], nhwc(b.temps[4], n), dst, be, stream, res);
        }
      }
      conv(w[1], nhwc(y, n), out, be, stream);
      break;
    }
    case B::sppf: {
      const Tensor& y = b.temps[0];
      const int64_t c = l.c_in / 2;
      conv(w[0], x, nhwc(y, n, 0, c), be, stream);
      for (int64_t i = 0; i < 3; ++i) {
        ops::MaxPool2dArgs p{};
        p.out = nhwc(y, n, (i + 1) * c, c);
        p.input = nhwc(y, n, i * c, c);
        p.kernel_h = p.kernel_w = l.kernel;
        p.pad_h = p.pad_w = l.kernel / 2;
        call_op(p, be, stream);
      }
      conv(w[1], nhwc(y, n), out, be, stream);
      break;
    }
    case B::psa: {
      const Yolov10Attention a = yolov10_attention(config_);
      const int64_t c = a.dim, hd = a.head_dim, heads = a.heads;
      const TensorView ab = nhwc(b.temps[0], n), bpart = nhwc(b.temps[0], n, c, c);
      const TensorView qkv = nhwc(b.temps[1], n), att = nhwc(b.temps[2], n);
      conv(w[0], x, ab, be, stream);      // cv1 -> [a | b]
      conv(w[2], bpart, qkv, be, stream);  // qkv (padded layout)
      ops::VarlenAttentionArgs at{};
      at.out = heads_view(att, 0, heads, hd);
      at.q = heads_view(qkv, 0, heads, hd);
      at.k = heads_view(qkv, heads * hd, heads, hd);
      at.v = heads_view(qkv, 2 * heads * hd, heads, hd);
      TensorView cu = cu_seqlens_.view();
      cu.shape[0] = n + 1;
      at.cu_seqlens_q = at.cu_seqlens_k = cu;
      at.max_seqlen_q = at.max_seqlen_k = static_cast<int32_t>(qkv.shape[1] * qkv.shape[2]);
      at.sm_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(a.key_dim)));
      at.causal = 0;
      call_op(at, be, stream);
      conv(w[4], nhwc(b.temps[1], n, 2 * heads * hd, c), nhwc(b.temps[3], n), be, stream, att);  // pe(v) + attn
      conv(w[3], nhwc(b.temps[3], n), nhwc(b.temps[4], n), be, stream, bpart);                   // b + proj(...)
      conv(w[5], nhwc(b.temps[4], n), nhwc(b.temps[5], n), be, stream);                          // ffn.0
      conv(w[6], nhwc(b.temps[5], n), bpart, be, stream, nhwc(b.temps[4], n));                   // b + ffn(b)
      conv(w[1], ab, out, be, stream);                                                            // cv2
      break;
    }
    case B::upsample: {
      ops::UpsampleNearest2dArgs u{};
      u.out = out;
      u.input = x;
      u.scale_h = u.scale_w = 2;
      call_op(u, be, stream);
      break;
    }
    case B::concat: {
      ops::ConcatChannelsArgs c{};
      c.out = out;
      for (size_t i = 0; i < l.from.size(); ++i)
        c.inputs[i] = nhwc(buffers_[static_cast<size_t>(l.from[i])].out, n);
      c.num_inputs = static_cast<int32_t>(l.from.size());
      call_op(c, be, stream);
      break;
    }
    case B::detect: {
      const int64_t box = 4 * config_.reg_max;
      int64_t a0 = 0;
      for (size_t lv = 0; lv < l.from.size(); ++lv) {
        const TensorView in = nhwc(buffers_[static_cast<size_t>(l.from[lv])].out, n);
        const int64_t g = in.shape[1];
        const Yolov10Conv* m = &w[lv * 8];
        const Tensor* t = &b.temps[lv * 6];
        conv(m[0], in, nhwc(t[0], n), be, stream);
        conv(m[1], nhwc(t[0], n), nhwc(t[1], n), be, stream);
        conv(m[2], nhwc(t[1], n), level_view(raw_, n, a0, g, 0, box), be, stream);
        conv(m[3], in, nhwc(t[2], n), be, stream);
        conv(m[4], nhwc(t[2], n), nhwc(t[3], n), be, stream);
        conv(m[5], nhwc(t[3], n), nhwc(t[4], n), be, stream);
        conv(m[6], nhwc(t[4], n), nhwc(t[5], n), be, stream);
        conv(m[7], nhwc(t[5], n), level_view(raw_, n, a0, g, box, config_.nc), be, stream);
        a0 += g * g;
      }
      break;
    }
  }
}

TensorView Yolov10Model::forward(const StepInputs& in, void* stream) {
  FK_CHECK(loaded_ && images_ > 0, "yolov10: forward before load and plan");
  (void)in;
  for (const Yolov10Layer& l : config_.layers) run_layer(l, stream);
  TensorView r = raw_.view();
  r.shape[0] = images_;
  ops::DflBoxDecodeArgs d;
  d.boxes = boxes_output();
  d.scores = scores_output();
  d.raw = r;
  d.anchors = anchors_;
  d.reg_max = static_cast<int32_t>(config_.reg_max);
  call_op(d, options_.device.type, stream);
  return r;
}

TensorView Yolov10Model::boxes_output() const {
  TensorView v = boxes_.view();
  v.shape[0] = images_;
  return v;
}

TensorView Yolov10Model::scores_output() const {
  TensorView v = scores_.view();
  v.shape[0] = images_;
  return v;
}

}  // namespace fk::models::vision
