// yolov10_c2f: definition (workloads, case, cost, tolerance, capture) and registrations.
// The baseline on either backend is its convolutions through the registry
// (yolov10_c2f_composed.cpp); the CPU baseline runs the double-precision reference instead
// when it is the oracle (f64 outputs), which conv2d does not take.
//
// Workload fields: batch (1), height, width (height), in_channels, out_channels, hidden (c:
// out_channels / 2), bottlenecks (1), shortcut (false), dtype (f16).
#include <cmath>
#include <string>

#include "fk/element.h"
#include "ops/common/case_builder.h"
#include "ops/yolo/yolov10_c2f_composed.h"

namespace fk::ops {
namespace {

using A = Yolov10C2fArgs;
constexpr int kSlots = 2 * A::kMaxBottlenecks;

fk_status yolov10_c2f_cpu(const void* args, void* stream) {
  const auto& a = *static_cast<const A*>(args);
  if (a.out.dtype != DType::f64) return yolov10_c2f_composed_cpu(args, stream);
  return op_guard([&] {
    validate_yolov10_c2f(a, DeviceType::cpu);
    yolov10_c2f_reference(a);
  });
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  return Json{{"batch", a.input.shape[0]},
              {"height", a.input.shape[1]},
              {"width", a.input.shape[2]},
              {"in_channels", a.input.shape[3]},
              {"out_channels", a.out.shape[3]},
              {"hidden", a.cv1_weight.shape[0] / 2},
              {"bottlenecks", a.num_bottlenecks},
              {"shortcut", a.shortcut != 0},
              {"dtype", std::string(dtype_name(a.input.dtype))}};
}

// Each output element passes through 3 + 2n roundings (every convolution rounds once) of
// values of about its own size: the dtype's default tolerance scaled by 4 + 2n.
Tolerance c2f_tolerance(const OpCase& c, const TensorArg&, DType dt) {
  Tolerance t = default_tolerance(dt);
  const double scale = 4.0 + 2.0 * c.as<A>().num_bottlenecks;
  return Tolerance{t.atol * scale, t.rtol * scale};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "yolo";
  d.level = "L3";
  d.summary = "YOLOv10's C2f block: 1x1 Conv split, n 3x3 bottlenecks (optional residual), 1x1 Conv over the "
              "concatenation (BatchNorm folded, SiLU)";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out)},
                   {"input", ArgRole::in, offsetof(A, input)},
                   {"cv1_weight", ArgRole::in, offsetof(A, cv1_weight)},
                   {"cv1_bias", ArgRole::in, offsetof(A, cv1_bias)},
                   {"cv2_weight", ArgRole::in, offsetof(A, cv2_weight)},
                   {"cv2_bias", ArgRole::in, offsetof(A, cv2_bias)}};
  for (int i = 0; i < kSlots; ++i)
    d.tensor_args.push_back({"m_weight" + std::to_string(i), ArgRole::in, offsetof(A, m_weight) + i * sizeof(TensorView)});
  for (int i = 0; i < kSlots; ++i)
    d.tensor_args.push_back({"m_bias" + std::to_string(i), ArgRole::in, offsetof(A, m_bias) + i * sizeof(TensorView)});
  d.tensor_args.push_back({"concat", ArgRole::workspace, offsetof(A, concat)});
  d.tensor_args.push_back({"mid", ArgRole::workspace, offsetof(A, mid)});
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const int64_t n_img = wl_int(w, "batch", 1), h = wl_int(w, "height"), wd = wl_int(w, "width", h);
    const int64_t c1 = wl_int(w, "in_channels"), c2 = wl_int(w, "out_channels"), c = wl_int(w, "hidden", c2 / 2);
    const int64_t n = wl_int(w, "bottlenecks", 1);
    const bool shortcut = wl_bool(w, "shortcut", false);
    const DType dt = wl_dtype(w, "dtype", DType::f16);
    FK_CHECK(n_img >= 0 && h >= 1 && wd >= 1 && c1 >= 1 && c2 >= 1 && c >= 1 && n >= 1 && n <= A::kMaxBottlenecks,
             A::kName, " workload needs positive sizes and 1..", A::kMaxBottlenecks, " bottlenecks, got ", w.dump());
    OpCase k = begin_case<A>(w, layout.size());
    uint64_t stream = 1;
    // Filters of standard deviation sqrt(2 / fan_in) (activations keep their size through
    // SiLU), biases in [-0.1, 0.1), inputs in [-2, 2).
    auto filter = [&](int64_t out, int64_t r, int64_t in) {
      const float a = static_cast<float>(std::sqrt(6.0 / static_cast<double>(r * r * in)));
      return random_tensor({out, r, r, in}, dt, seed, stream++, -a, a);
    };
    auto bias = [&](int64_t out) { return random_tensor({out}, dt, seed, stream++, -0.1f, 0.1f); };
    k.tensors[0] = Tensor::empty({n_img, h, wd, c2}, dt);
    k.tensors[1] = random_tensor({n_img, h, wd, c1}, dt, seed, stream++, -2.f, 2.f);
    k.tensors[2] = filter(2 * c, 1, c1);
    k.tensors[3] = bias(2 * c);
    k.tensors[4] = filter(c2, 1, (2 + n) * c);
    k.tensors[5] = bias(c2);
    for (int i = 0; i < kSlots; ++i) {
      k.tensors[6 + i] = i < 2 * n ? filter(c, 3, c) : absent_tensor(dt);
      k.tensors[6 + kSlots + i] = i < 2 * n ? bias(c) : absent_tensor(dt);
    }
    k.tensors[6 + 2 * kSlots] = Tensor::empty({n_img, h, wd, (2 + n) * c}, dt);
    k.tensors[7 + 2 * kSlots] = Tensor::empty({n_img, h, wd, c}, dt);
    A& a = k.as<A>();
    a.num_bottlenecks = static_cast<int32_t>(n);
    a.shortcut = shortcut ? 1 : 0;
    k.bind(layout);
    return k;
  };
  d.cost = [](const OpCase& k) {
    const auto& a = k.as<A>();
    const double pixels = static_cast<double>(a.input.shape[0] * a.input.shape[1] * a.input.shape[2]);
    double macs = static_cast<double>(a.cv1_weight.numel() + a.cv2_weight.numel());
    for (int j = 0; j < 2 * a.num_bottlenecks; ++j) macs += static_cast<double>(a.m_weight[j].numel());
    return OpCost{static_cast<double>(a.input.nbytes() + a.out.nbytes()), 2.0 * macs * pixels, a.input.dtype};
  };
  d.tolerance = c2f_tolerance;
  d.test_workloads = {
      {{"batch", 2}, {"height", 5}, {"width", 4}, {"in_channels", 8}, {"out_channels", 8}, {"shortcut", true}},
      {{"batch", 1}, {"height", 6}, {"in_channels", 12}, {"out_channels", 16}, {"bottlenecks", 2}, {"dtype", "bf16"}},
      {{"batch", 1},
       {"height", 3},
       {"width", 7},
       {"in_channels", 6},
       {"out_channels", 4},
       {"bottlenecks", 2},
       {"shortcut", true},
       {"dtype", "f32"}},
      {{"batch", 1}, {"height", 1}, {"in_channels", 16}, {"out_channels", 8}, {"bottlenecks", 4}, {"shortcut", true}},
      {{"batch", 0}, {"height", 2}, {"in_channels", 8}, {"out_channels", 8}},
  };
  // YOLOv10n's C2f blocks at 640 x 640 (model.2, 4, 6, 8 with shortcuts; 13, 16, 19 without).
  for (int64_t b : {1, 32}) {
    d.bench_workloads.push_back({{"batch", b}, {"height", 160}, {"in_channels", 32}, {"out_channels", 32}, {"shortcut", true}});
    d.bench_workloads.push_back(
        {{"batch", b}, {"height", 80}, {"in_channels", 64}, {"out_channels", 64}, {"bottlenecks", 2}, {"shortcut", true}});
    d.bench_workloads.push_back(
        {{"batch", b}, {"height", 40}, {"in_channels", 128}, {"out_channels", 128}, {"bottlenecks", 2}, {"shortcut", true}});
    d.bench_workloads.push_back({{"batch", b}, {"height", 20}, {"in_channels", 256}, {"out_channels", 256}, {"shortcut", true}});
    d.bench_workloads.push_back({{"batch", b}, {"height", 40}, {"in_channels", 384}, {"out_channels", 128}});
    d.bench_workloads.push_back({{"batch", b}, {"height", 80}, {"in_channels", 192}, {"out_channels", 64}});
    d.bench_workloads.push_back({{"batch", b}, {"height", 40}, {"in_channels", 192}, {"out_channels", 128}});
  }
  d.covers = {"conv2d"};
  d.composed[static_cast<int>(DeviceType::cpu)] = yolov10_c2f_composed_cpu;
  d.composed[static_cast<int>(DeviceType::cuda)] = yolov10_c2f_composed_cuda;
  d.workload_from_call = workload_from_call;
  d.architectures = {"yolov10"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("yolov10_c2f", cpu, yolov10_c2f_cpu);

}  // namespace
}  // namespace fk::ops
