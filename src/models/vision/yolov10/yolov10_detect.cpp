#include "models/vision/yolov10/yolov10_detect.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/detect.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "fk/tensor.h"

namespace fk::models::vision {
namespace {

// Indices of the k largest values, descending, ties to the lower index.
std::vector<int64_t> top_k(const std::vector<double>& v, int64_t k) {
  std::vector<int64_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), int64_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return v[static_cast<size_t>(a)] > v[static_cast<size_t>(b)]; });
  idx.resize(static_cast<size_t>(std::min<int64_t>(k, static_cast<int64_t>(idx.size()))));
  return idx;
}

}  // namespace

Tensor yolov10_anchors(const Yolov10Config& c) {
  Tensor t = Tensor::empty({c.anchors(), 3}, DType::f32);
  float* p = t.data_as<float>();
  for (int f : c.detect().from) {
    const int64_t stride = c.layers[static_cast<size_t>(f)].stride_px, g = c.imgsz / stride;
    for (int64_t y = 0; y < g; ++y)
      for (int64_t x = 0; x < g; ++x, p += 3) {
        p[0] = static_cast<float>(x) + 0.5f;
        p[1] = static_cast<float>(y) + 0.5f;
        p[2] = static_cast<float>(stride);
      }
  }
  return t;
}

Yolov10Decoded yolov10_decode(const Yolov10Config& c, const std::vector<double>& raw) {
  const int64_t a_total = c.anchors(), no = c.outputs_per_anchor();
  FK_CHECK(static_cast<int64_t>(raw.size()) == a_total * no, "yolov10 decode: raw output has ", raw.size(),
           " values, expected ", a_total, " anchors x ", no);
  // raw as f32 (the op's widest input; the reference's and the model's outputs are f32 or
  // narrower, so this is exact for them).
  Tensor r = Tensor::empty({1, a_total, no}, DType::f32);
  std::transform(raw.begin(), raw.end(), r.data_as<float>(), [](double x) { return static_cast<float>(x); });
  // The CPU implementation takes f64 outputs (it is the op's oracle): no rounding before the top-k.
  Tensor boxes = Tensor::empty({1, a_total, 4}, DType::f64), scores = Tensor::empty({1, a_total, c.nc}, DType::f64);
  const Tensor anchors = yolov10_anchors(c);
  ops::DflBoxDecodeArgs a;
  a.boxes = boxes, a.scores = scores, a.raw = r, a.anchors = anchors, a.reg_max = static_cast<int32_t>(c.reg_max);
  call_op(a, DeviceType::cpu, nullptr);
  Yolov10Decoded d;
  d.boxes.assign(boxes.data_as<double>(), boxes.data_as<double>() + boxes.numel());
  d.scores.assign(scores.data_as<double>(), scores.data_as<double>() + scores.numel());
  return d;
}

std::vector<Yolov10Detection> yolov10_select(const Yolov10Config& c, const Yolov10Decoded& d) {
  const int64_t a_total = static_cast<int64_t>(d.boxes.size() / 4), nc = c.nc;
  std::vector<double> best(static_cast<size_t>(a_total));
  for (int64_t a = 0; a < a_total; ++a)
    best[static_cast<size_t>(a)] = *std::max_element(d.scores.begin() + a * nc, d.scores.begin() + (a + 1) * nc);
  const std::vector<int64_t> anchors = top_k(best, c.max_det);
  std::vector<double> pairs;
  pairs.reserve(anchors.size() * static_cast<size_t>(nc));
  for (int64_t a : anchors)
    for (int64_t k = 0; k < nc; ++k) pairs.push_back(d.scores[static_cast<size_t>(a * nc + k)]);
  std::vector<Yolov10Detection> out;
  for (int64_t i : top_k(pairs, c.max_det)) {
    Yolov10Detection det;
    det.anchor = anchors[static_cast<size_t>(i / nc)];
    det.label = static_cast<int32_t>(i % nc);
    det.score = static_cast<float>(pairs[static_cast<size_t>(i)]);
    std::copy_n(d.boxes.begin() + det.anchor * 4, 4, det.box);
    out.push_back(det);
  }
  return out;
}

std::vector<std::vector<Yolov10Detection>> yolov10_detect(const Yolov10Config& c, const TensorView& boxes,
                                                          const TensorView& scores) {
  const int64_t a_total = c.anchors();
  FK_CHECK(boxes.rank == 3 && boxes.shape[1] == a_total && boxes.shape[2] == 4 && boxes.dtype == DType::f32 &&
               boxes.is_contiguous() && scores.rank == 3 && scores.shape[0] == boxes.shape[0] &&
               scores.shape[1] == a_total && scores.shape[2] == c.nc && scores.dtype == DType::f32 &&
               scores.is_contiguous(),
           "yolov10 detect: boxes and scores must be contiguous f32 [N, ", a_total, ", 4] and [N, ", a_total, ", ",
           c.nc, "], got ", describe(boxes), " and ", describe(scores));
  auto host = [](const TensorView& v) {  // small: one copy each
    std::vector<float> out(static_cast<size_t>(v.numel()));
    rt::memcpy_sync(out.data(), Device::cpu(), v.data, v.device, static_cast<size_t>(v.nbytes()));
    return out;
  };
  const std::vector<float> b = host(boxes), s = host(scores);
  std::vector<std::vector<Yolov10Detection>> images;
  for (int64_t n = 0; n < boxes.shape[0]; ++n) {
    Yolov10Decoded d;
    d.boxes.assign(b.begin() + n * a_total * 4, b.begin() + (n + 1) * a_total * 4);
    d.scores.assign(s.begin() + n * a_total * c.nc, s.begin() + (n + 1) * a_total * c.nc);
    images.push_back(yolov10_select(c, d));
  }
  return images;
}

std::string yolov10_detections_json(const std::vector<std::vector<Yolov10Detection>>& images) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& dets : images) {
    nlohmann::json boxes = nlohmann::json::array(), scores = nlohmann::json::array(), classes = nlohmann::json::array();
    for (const Yolov10Detection& d : dets) {
      boxes.push_back({d.box[0], d.box[1], d.box[2], d.box[3]});
      scores.push_back(d.score);
      classes.push_back(d.label);
    }
    out.push_back({{"boxes", boxes}, {"scores", scores}, {"classes", classes}});
  }
  return out.dump();
}

}  // namespace fk::models::vision
