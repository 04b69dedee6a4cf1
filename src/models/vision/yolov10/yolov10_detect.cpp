#include "models/vision/yolov10/yolov10_detect.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>

#include "fk/element.h"
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

Yolov10Decoded yolov10_decode(const Yolov10Config& c, const std::vector<double>& raw) {
  const int64_t a_total = c.anchors(), no = c.outputs_per_anchor(), bins = c.reg_max;
  FK_CHECK(static_cast<int64_t>(raw.size()) == a_total * no, "yolov10 decode: raw output has ", raw.size(),
           " values, expected ", a_total, " anchors x ", no);
  Yolov10Decoded d;
  d.boxes.resize(static_cast<size_t>(a_total * 4));
  d.scores.resize(static_cast<size_t>(a_total * c.nc));
  int64_t a = 0;
  for (int f : c.detect().from) {
    const int64_t stride = c.layers[static_cast<size_t>(f)].stride_px, g = c.imgsz / stride;
    for (int64_t y = 0; y < g; ++y)
      for (int64_t x = 0; x < g; ++x, ++a) {
        const double* r = raw.data() + a * no;
        double dist[4];
        for (int side = 0; side < 4; ++side) {
          const double* logits = r + side * bins;
          const double top = *std::max_element(logits, logits + bins);
          double sum = 0, weighted = 0;
          for (int64_t i = 0; i < bins; ++i) {
            const double e = std::exp(logits[i] - top);
            sum += e;
            weighted += e * static_cast<double>(i);
          }
          dist[side] = weighted / sum;
        }
        const double ax = static_cast<double>(x) + 0.5, ay = static_cast<double>(y) + 0.5, s = static_cast<double>(stride);
        float* box = d.boxes.data() + a * 4;
        box[0] = static_cast<float>((ax - dist[0]) * s);
        box[1] = static_cast<float>((ay - dist[1]) * s);
        box[2] = static_cast<float>((ax + dist[2]) * s);
        box[3] = static_cast<float>((ay + dist[3]) * s);
        for (int64_t k = 0; k < c.nc; ++k)
          d.scores[static_cast<size_t>(a * c.nc + k)] = static_cast<float>(1.0 / (1.0 + std::exp(-r[4 * bins + k])));
      }
  }
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

std::vector<std::vector<Yolov10Detection>> yolov10_detect(const Yolov10Config& c, const TensorView& raw) {
  const int64_t no = c.outputs_per_anchor(), a_total = c.anchors();
  FK_CHECK(raw.rank == 3 && raw.shape[1] == a_total && raw.shape[2] == no && raw.is_contiguous() &&
               dtype_is_float(raw.dtype),
           "yolov10 decode: raw must be a contiguous float [N, ", a_total, ", ", no, "], got ", describe(raw));
  Tensor host;
  TensorView v = raw;
  if (!raw.device.is_cpu()) {  // the raw output is small (8400 x 144 for 640 x 640): one copy
    host = Tensor::empty(Shape(raw.shape, raw.shape + 3), raw.dtype);
    rt::memcpy_sync(host.data(), Device::cpu(), raw.data, raw.device, static_cast<size_t>(raw.nbytes()));
    v = host.view();
  }
  std::vector<std::vector<Yolov10Detection>> images;
  for (int64_t n = 0; n < raw.shape[0]; ++n) {
    std::vector<double> r(static_cast<size_t>(a_total * no));
    for (size_t i = 0; i < r.size(); ++i)
      r[i] = load_element(static_cast<const char*>(v.data) + (static_cast<size_t>(n * a_total * no) + i) * v.element_size(),
                          v.dtype);
    images.push_back(yolov10_select(c, yolov10_decode(c, r)));
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
