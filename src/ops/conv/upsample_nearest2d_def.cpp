// upsample_nearest2d: definition (workloads, inputs, cost) and the CPU reference, which is
// also the CPU implementation (a copy: outputs are input values).
//
// Workload fields: batch (1), height, width, channels, scale (2, both axes), dtype (f16).
#include <string>

#include "fk/element.h"
#include "ops/common/case_builder.h"
#include "ops/conv/conv_validate.h"

namespace fk::ops {
namespace {

using A = UpsampleNearest2dArgs;

void upsample_nearest2d_reference(const A& a) {
  const TensorView &in = a.input, &out = a.out;
  for (int64_t n = 0; n < out.shape[0]; ++n)
    for (int64_t y = 0; y < out.shape[1]; ++y)
      for (int64_t x = 0; x < out.shape[2]; ++x)
        for (int64_t c = 0; c < out.shape[3]; ++c) set(out, get(in, n, y / a.scale_h, x / a.scale_w, c), n, y, x, c);
}

fk_status upsample_nearest2d_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_upsample_nearest2d(a, DeviceType::cpu);
    upsample_nearest2d_reference(a);
  });
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  return Json{{"batch", a.input.shape[0]},    {"height", a.input.shape[1]}, {"width", a.input.shape[2]},
              {"channels", a.input.shape[3]}, {"scale", a.scale_h},         {"dtype", std::string(dtype_name(a.input.dtype))}};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "conv";
  d.level = "L1";
  d.summary = "NHWC nearest-neighbour upsampling by an integer factor (YOLOv10n's FPN, nn.Upsample nearest)";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out)}, {"input", ArgRole::in, offsetof(A, input)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const int64_t N = wl_int(w, "batch", 1), H = wl_int(w, "height"), W = wl_int(w, "width"),
                  C = wl_int(w, "channels"), s = wl_int(w, "scale", 2);
    const DType dt = wl_dtype(w, "dtype", DType::f16);
    FK_CHECK(N >= 0 && H >= 1 && W >= 1 && C >= 1 && s >= 1, A::kName, " workload needs positive sizes, got ",
             w.dump());
    OpCase c = begin_case<A>(w, 2);
    c.tensors[0] = Tensor::empty({N, H * s, W * s, C}, dt);
    c.tensors[1] = random_tensor({N, H, W, C}, dt, seed, 1, -4.f, 4.f);
    A& a = c.as<A>();
    a.scale_h = a.scale_w = static_cast<int32_t>(s);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    return OpCost{static_cast<double>(a.input.nbytes() + a.out.nbytes()), 0.0, DType::f32};
  };
  d.test_workloads = {
      {{"batch", 2}, {"height", 3}, {"width", 5}, {"channels", 12}},
      {{"batch", 1}, {"height", 4}, {"width", 4}, {"channels", 3}, {"dtype", "bf16"}},
      {{"batch", 1}, {"height", 2}, {"width", 3}, {"channels", 16}, {"scale", 3}, {"dtype", "f32"}},
      {{"batch", 1}, {"height", 3}, {"width", 2}, {"channels", 7}, {"scale", 1}},
      {{"batch", 0}, {"height", 2}, {"width", 2}, {"channels", 8}},
  };
  // YOLOv10n's two FPN upsamplings at 640x640 (model.11: 20x20x256, model.14: 40x40x128).
  for (int64_t b : {1, 32}) {
    d.bench_workloads.push_back({{"batch", b}, {"height", 20}, {"width", 20}, {"channels", 256}});
    d.bench_workloads.push_back({{"batch", b}, {"height", 40}, {"width", 40}, {"channels", 128}});
  }
  d.workload_from_call = workload_from_call;
  d.architectures = {"yolov10n"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("upsample_nearest2d", cpu, upsample_nearest2d_cpu);

}  // namespace
}  // namespace fk::ops
