// max_pool2d: definition (workloads, inputs, cost) and the CPU reference, which is also
// the CPU implementation (a comparison per tap, no rounding: outputs are input values).
//
// Workload fields: batch (1), height, width, channels, kernel (5, square), stride (1),
// padding (kernel / 2), dtype (f16). The defaults are YOLOv10n's SPPF pool.
#include <cmath>
#include <limits>
#include <string>

#include "fk/element.h"
#include "ops/common/case_builder.h"
#include "ops/conv/conv_validate.h"

namespace fk::ops {
namespace {

using A = MaxPool2dArgs;

void max_pool2d_reference(const A& a) {
  const TensorView &in = a.input, &out = a.out;
  const int64_t N = in.shape[0], H = in.shape[1], W = in.shape[2], C = in.shape[3];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < out.shape[1]; ++p)
      for (int64_t q = 0; q < out.shape[2]; ++q)
        for (int64_t c = 0; c < C; ++c) {
          double m = -std::numeric_limits<double>::infinity();
          for (int64_t i = 0; i < a.kernel_h; ++i) {
            const int64_t h = p * a.stride_h - a.pad_h + i;
            if (h < 0 || h >= H) continue;
            for (int64_t j = 0; j < a.kernel_w; ++j) {
              const int64_t w = q * a.stride_w - a.pad_w + j;
              if (w < 0 || w >= W) continue;
              const double x = get(in, n, h, w, c);
              if (x > m || std::isnan(x)) m = x;  // NaN wins, as in torch
              if (std::isnan(m)) break;
            }
            if (std::isnan(m)) break;
          }
          set(out, m, n, p, q, c);
        }
}

fk_status max_pool2d_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_max_pool2d(a, DeviceType::cpu);
    max_pool2d_reference(a);
  });
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  return Json{{"batch", a.input.shape[0]},    {"height", a.input.shape[1]}, {"width", a.input.shape[2]},
              {"channels", a.input.shape[3]}, {"kernel", a.kernel_h},       {"stride", a.stride_h},
              {"padding", a.pad_h},           {"dtype", std::string(dtype_name(a.input.dtype))}};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "conv";
  d.level = "L1";
  d.summary = "NHWC max pooling (kernel, stride, padding that never wins; NaN propagates), as YOLOv10n's SPPF";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out)}, {"input", ArgRole::in, offsetof(A, input)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const int64_t N = wl_int(w, "batch", 1), H = wl_int(w, "height"), W = wl_int(w, "width"),
                  C = wl_int(w, "channels"), k = wl_int(w, "kernel", 5), s = wl_int(w, "stride", 1),
                  pad = wl_int(w, "padding", k / 2);
    const DType dt = wl_dtype(w, "dtype", DType::f16);
    FK_CHECK(N >= 0 && H >= 1 && W >= 1 && C >= 1 && k >= 1 && s >= 1 && pad >= 0 && 2 * pad <= k, A::kName,
             " workload needs positive sizes and 0 <= padding <= kernel / 2, got ", w.dump());
    const int64_t P = conv_out_size(H, k, s, pad, 1), Q = conv_out_size(W, k, s, pad, 1);
    FK_CHECK(P >= 1 && Q >= 1, A::kName, " workload: the window does not fit the padded image, got ", w.dump());
    OpCase c = begin_case<A>(w, 2);
    c.tensors[0] = Tensor::empty({N, P, Q, C}, dt);
    c.tensors[1] = random_tensor({N, H, W, C}, dt, seed, 1, -4.f, 4.f);
    A& a = c.as<A>();
    a.kernel_h = a.kernel_w = static_cast<int32_t>(k);
    a.stride_h = a.stride_w = static_cast<int32_t>(s);
    a.pad_h = a.pad_w = static_cast<int32_t>(pad);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double compares = static_cast<double>(a.out.numel()) * a.kernel_h * a.kernel_w;
    return OpCost{static_cast<double>(a.input.nbytes() + a.out.nbytes()), compares, DType::f32};
  };
  d.test_workloads = {
      {{"batch", 2}, {"height", 7}, {"width", 6}, {"channels", 10}},  // SPPF's 5x5/1/2
      {{"batch", 1}, {"height", 4}, {"width", 3}, {"channels", 16}},  // window wider than the image
      {{"batch", 1}, {"height", 9}, {"width", 8}, {"channels", 24}, {"kernel", 3}, {"stride", 2}, {"padding", 1},
       {"dtype", "bf16"}},
      {{"batch", 2}, {"height", 8}, {"width", 7}, {"channels", 5}, {"kernel", 2}, {"stride", 2}, {"padding", 0},
       {"dtype", "f32"}},
      {{"batch", 1}, {"height", 5}, {"width", 5}, {"channels", 3}, {"kernel", 3}, {"stride", 3}, {"padding", 0}},
      {{"batch", 0}, {"height", 5}, {"width", 5}, {"channels", 8}},
  };
  // SPPF at 640x640 (20x20x128, three passes a forward) at batch 1 and 32; a ResNet-style
  // stem pool for scale.
  for (int64_t b : {1, 32}) d.bench_workloads.push_back({{"batch", b}, {"height", 20}, {"width", 20}, {"channels", 128}});
  d.bench_workloads.push_back(
      {{"batch", 32}, {"height", 112}, {"width", 112}, {"channels", 64}, {"kernel", 3}, {"stride", 2}, {"padding", 1}});
  d.workload_from_call = workload_from_call;
  d.architectures = {"yolov10n"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("max_pool2d", cpu, max_pool2d_cpu);

}  // namespace
}  // namespace fk::ops
