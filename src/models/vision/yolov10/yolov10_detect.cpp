#include "models/vision/yolov10/yolov10_detect.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <thread>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/detect.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "fk/tensor.h"

namespace fk::models::vision {
namespace {

// Indices of the k largest values, descending, ties to the lower index.
// The indices of the k largest of v[0, n), largest first, ties to the lower index (torch.topk's
// sorted order, as a stable sort would give): a partial sort, O(n log k).
template <class T>
std::vector<int64_t> top_k(const T* v, int64_t n, int64_t k) {
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), int64_t{0});
  k = std::min(k, n);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [v](int64_t a, int64_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); });
  idx.resize(static_cast<size_t>(k));
  return idx;
}

// yolov10_select over one image's boxes [A, 4] and scores [A, nc], f32 or f64.
template <class T>
std::vector<Yolov10Detection> select_detections(const Yolov10Config& c, const T* boxes, const T* scores,
                                                int64_t a_total) {
  const int64_t nc = c.nc;
  std::vector<T> best(static_cast<size_t>(a_total));
  for (int64_t a = 0; a < a_total; ++a)
    best[static_cast<size_t>(a)] = *std::max_element(scores + a * nc, scores + (a + 1) * nc);
  const std::vector<int64_t> anchors = top_k(best.data(), a_total, c.max_det);
  std::vector<T> pairs;
  pairs.reserve(anchors.size() * static_cast<size_t>(nc));
  for (int64_t a : anchors) pairs.insert(pairs.end(), scores + a * nc, scores + (a + 1) * nc);
  std::vector<Yolov10Detection> out;
  for (int64_t i : top_k(pairs.data(), static_cast<int64_t>(pairs.size()), c.max_det)) {
    Yolov10Detection det;
    det.anchor = anchors[static_cast<size_t>(i / nc)];
    det.label = static_cast<int32_t>(i % nc);
    det.score = static_cast<float>(pairs[static_cast<size_t>(i)]);
    for (int j = 0; j < 4; ++j) det.box[j] = static_cast<float>(boxes[det.anchor * 4 + j]);
    out.push_back(det);
  }
  return out;
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
  return select_detections(c, d.boxes.data(), d.scores.data(), static_cast<int64_t>(d.boxes.size() / 4));
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
  // Host views read in place; device ones copied once each.
  std::vector<float> b_copy, s_copy;
  auto host = [](const TensorView& v, std::vector<float>& copy) -> const float* {
    if (v.device.is_cpu()) return static_cast<const float*>(v.data);
    copy.resize(static_cast<size_t>(v.numel()));
    rt::memcpy_sync(copy.data(), Device::cpu(), v.data, v.device, static_cast<size_t>(v.nbytes()));
    return copy.data();
  };
  const float* b = host(boxes, b_copy);
  const float* s = host(scores, s_copy);
  // Images are independent: a batch's selections run on the host's cores.
  const int64_t n_images = boxes.shape[0];
  std::vector<std::vector<Yolov10Detection>> images(static_cast<size_t>(n_images));
  const int64_t workers = std::min<int64_t>(n_images, std::max(1u, std::thread::hardware_concurrency()));
  auto work = [&](int64_t w) {
    for (int64_t n = w; n < n_images; n += workers)
      images[static_cast<size_t>(n)] = select_detections(c, b + n * a_total * 4, s + n * a_total * c.nc, a_total);
  };
  std::vector<std::thread> threads;
  for (int64_t w = 1; w < workers; ++w) threads.emplace_back(work, w);
  work(0);
  for (std::thread& t : threads) t.join();
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
