// dfl_box_decode: definition (workloads, inputs, cost, tolerance) and the double-precision
// CPU reference, which is also the CPU implementation.
//
// Workload fields: batch (1), grids (the levels' grid sizes, [80, 40, 20] at 640 x 640),
// strides ([8, 16, 32]), classes (80), reg_max (16), dtype of raw (f16).
#include <cmath>
#include <string>
#include <tuple>

#include "fk/element.h"
#include "fk/runtime.h"
#include "ops/common/case_builder.h"
#include "ops/detect/dfl_box_decode_validate.h"

namespace fk::ops {
namespace {

using A = DflBoxDecodeArgs;

void dfl_box_decode_reference(const A& a) {
  const int64_t n_img = a.raw.shape[0], anchors = a.raw.shape[1], r = a.reg_max, nc = a.raw.shape[2] - 4 * r;
  for (int64_t n = 0; n < n_img; ++n)
    for (int64_t i = 0; i < anchors; ++i) {
      double d[4];
      for (int64_t s = 0; s < 4; ++s) {
        double top = -INFINITY;
        for (int64_t b = 0; b < r; ++b) top = std::max(top, get(a.raw, n, i, s * r + b));
        double sum = 0, weighted = 0;
        for (int64_t b = 0; b < r; ++b) {
          const double e = std::exp(get(a.raw, n, i, s * r + b) - top);
          sum += e;
          weighted += e * static_cast<double>(b);
        }
        d[s] = weighted / sum;
      }
      const double ax = get(a.anchors, i, 0), ay = get(a.anchors, i, 1), st = get(a.anchors, i, 2);
      set(a.boxes, (ax - d[0]) * st, n, i, 0);
      set(a.boxes, (ay - d[1]) * st, n, i, 1);
      set(a.boxes, (ax + d[2]) * st, n, i, 2);
      set(a.boxes, (ay + d[3]) * st, n, i, 3);
      for (int64_t k = 0; k < nc; ++k) set(a.scores, 1.0 / (1.0 + std::exp(-get(a.raw, n, i, 4 * r + k))), n, i, k);
    }
}

fk_status dfl_box_decode_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_dfl_box_decode(a, DeviceType::cpu);
    dfl_box_decode_reference(a);
  });
}

// The anchors of square grids: cell centres row-major per level, with the level's stride.
Tensor anchor_table(const std::vector<int64_t>& grids, const std::vector<int64_t>& strides) {
  int64_t total = 0;
  for (int64_t g : grids) total += g * g;
  Tensor t = Tensor::empty({total, 3}, DType::f32);
  float* p = t.data_as<float>();
  for (size_t l = 0; l < grids.size(); ++l)
    for (int64_t y = 0; y < grids[l]; ++y)
      for (int64_t x = 0; x < grids[l]; ++x, p += 3) {
        p[0] = static_cast<float>(x) + 0.5f;
        p[1] = static_cast<float>(y) + 0.5f;
        p[2] = static_cast<float>(strides[l]);
      }
  return t;
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  // Rebuild the levels from the anchors' strides (each level a square grid). The anchors
  // are copied to the host (on the GPU they are device memory; capture synchronises around
  // every call anyway).
  FK_CHECK(a.anchors.is_contiguous() && a.anchors.dtype == DType::f32, A::kName,
           ": capture needs contiguous f32 anchors, got ", describe(a.anchors));
  std::vector<float> host(static_cast<size_t>(a.anchors.numel()));
  rt::memcpy_sync(host.data(), Device::cpu(), a.anchors.data, a.anchors.device, host.size() * sizeof(float));
  std::vector<int64_t> grids, strides;
  const float* p = host.data();
  int64_t count = 0;
  for (int64_t i = 0; i <= a.anchors.shape[0]; ++i) {
    const bool end = i == a.anchors.shape[0] || (count > 0 && static_cast<int64_t>(p[3 * i + 2]) != strides.back());
    if (end && count > 0) grids.push_back(static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(count)))));
    if (i == a.anchors.shape[0]) break;
    if (count == 0 || end) {
      strides.push_back(static_cast<int64_t>(p[3 * i + 2]));
      count = 0;
    }
    ++count;
  }
  return Json{{"batch", a.raw.shape[0]},   {"grids", grids},       {"strides", strides},
              {"classes", a.raw.shape[2] - 4 * a.reg_max}, {"reg_max", a.reg_max},
              {"dtype", std::string(dtype_name(a.raw.dtype))}};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "detect";
  d.level = "L1";
  d.summary = "YOLOv10 head decode: DFL softmax expectation over reg_max bins to xyxy boxes, sigmoid class scores";
  d.args_size = sizeof(A);
  d.tensor_args = {{"boxes", ArgRole::out, offsetof(A, boxes)},
                   {"scores", ArgRole::out, offsetof(A, scores)},
                   {"raw", ArgRole::in, offsetof(A, raw)},
                   {"anchors", ArgRole::in, offsetof(A, anchors)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const int64_t n = wl_int(w, "batch", 1), nc = wl_int(w, "classes", 80), r = wl_int(w, "reg_max", 16);
    const std::vector<int64_t> grids = w.contains("grids") ? wl_int_list(w, "grids") : std::vector<int64_t>{80, 40, 20};
    const std::vector<int64_t> strides =
        w.contains("strides") ? wl_int_list(w, "strides") : std::vector<int64_t>{8, 16, 32};
    FK_CHECK(n >= 0 && nc >= 1 && r >= 1 && !grids.empty() && grids.size() == strides.size(), A::kName,
             " workload needs batch >= 0, classes and reg_max >= 1, and one stride per grid, got ", w.dump());
    const DType dt = wl_dtype(w, "dtype", DType::f16);
    Tensor anchors = anchor_table(grids, strides);
    const int64_t a_total = anchors.size(0);
    OpCase c = begin_case<A>(w, 4);
    c.tensors[0] = Tensor::empty({n, a_total, 4}, DType::f32);
    c.tensors[1] = Tensor::empty({n, a_total, nc}, DType::f32);
    c.tensors[2] = random_tensor({n, a_total, 4 * r + nc}, dt, seed, 1, -6.f, 6.f);
    c.tensors[3] = anchors;
    c.as<A>().reg_max = static_cast<int32_t>(r);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double flops = static_cast<double>(a.raw.numel()) * 4.0;  // exp, add, multiply-add per logit
    return OpCost{static_cast<double>(a.raw.nbytes() + a.anchors.nbytes() + a.boxes.nbytes() + a.scores.nbytes()),
                  flops, DType::f32};
  };
  // Boxes are in pixels (up to stride * (grid + reg_max)): an absolute error relative to
  // the stride, what f32 exp and sums give; scores in (0, 1).
  d.tolerance = [](const OpCase& c, const TensorArg& arg, DType) {
    if (arg.name == "boxes") return Tolerance{2e-4 * 32, 2e-5};
    (void)c;
    return Tolerance{2e-6, 2e-5};
  };
  d.test_workloads = {
      {{"batch", 2}, {"grids", {8, 4, 2}}, {"classes", 8}},
      {{"batch", 1}, {"grids", {3}}, {"strides", {8}}, {"classes", 1}, {"reg_max", 1}, {"dtype", "f32"}},
      {{"batch", 1}, {"grids", {5, 3}}, {"strides", {4, 16}}, {"classes", 3}, {"reg_max", 7}, {"dtype", "bf16"}},
      {{"batch", 0}, {"grids", {2}}, {"strides", {8}}, {"classes", 4}},
      {{"batch", 1}, {"grids", {20, 10, 5}}, {"classes", 80}},
  };
  // YOLOv10n at 640 x 640 (8400 anchors, 80 classes).
  for (int64_t b : {1, 32}) d.bench_workloads.push_back({{"batch", b}});
  d.workload_from_call = workload_from_call;
  d.architectures = {"yolov10"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("dfl_box_decode", cpu, dfl_box_decode_cpu);

}  // namespace
}  // namespace fk::ops
