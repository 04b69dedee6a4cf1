// global_avg_pool: definition (workloads, inputs, cost) and the CPU reference, which is also
// the CPU implementation: each channel's pixels summed in double, divided once, one rounding
// to the output dtype.
//
// Workload fields: batch (1), height, width, channels, dtype (f16). The bench workloads are
// MobileNetV4-conv-small's head (7x7x960 at 224x224).
#include <string>

#include "fk/element.h"
#include "ops/common/case_builder.h"
#include "ops/conv/conv_validate.h"

namespace fk::ops {
namespace {

using A = GlobalAvgPoolArgs;

void global_avg_pool_reference(const A& a) {
  const TensorView &in = a.input, &out = a.out;
  const int64_t N = in.shape[0], H = in.shape[1], W = in.shape[2], C = in.shape[3];
  const double inv = 1.0 / static_cast<double>(H * W);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      double sum = 0;
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) sum += get(in, n, h, w, c);
      set(out, sum * inv, n, c);
    }
}

fk_status global_avg_pool_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_global_avg_pool(a, DeviceType::cpu);
    global_avg_pool_reference(a);
  });
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  return Json{{"batch", a.input.shape[0]},
              {"height", a.input.shape[1]},
              {"width", a.input.shape[2]},
              {"channels", a.input.shape[3]},
              {"dtype", std::string(dtype_name(a.input.dtype))}};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "conv";
  d.level = "L1";
  d.summary = "NHWC global average pooling [N, H, W, C] -> [N, C], f32 accumulation, as MobileNetV4's head";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out)}, {"input", ArgRole::in, offsetof(A, input)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const int64_t N = wl_int(w, "batch", 1), H = wl_int(w, "height"), W = wl_int(w, "width"), C = wl_int(w, "channels");
    const DType dt = wl_dtype(w, "dtype", DType::f16);
    FK_CHECK(N >= 0 && H >= 1 && W >= 1 && C >= 1, A::kName, " workload needs positive sizes, got ", w.dump());
    OpCase c = begin_case<A>(w, 2);
    c.tensors[0] = Tensor::empty({N, C}, dt);
    // Post-ReLU activations are non-negative; a symmetric range also exercises cancellation.
    c.tensors[1] = random_tensor({N, H, W, C}, dt, seed, 1, -2.f, 4.f);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    return OpCost{static_cast<double>(a.input.nbytes() + a.out.nbytes()), static_cast<double>(a.input.numel()),
                  DType::f32};
  };
  d.test_workloads = {
      {{"batch", 2}, {"height", 7}, {"width", 7}, {"channels", 96}},
      {{"batch", 3}, {"height", 1}, {"width", 1}, {"channels", 40}},                     // 1x1: a copy
      {{"batch", 2}, {"height", 5}, {"width", 3}, {"channels", 37}, {"dtype", "bf16"}},  // odd C
      {{"batch", 1}, {"height", 13}, {"width", 11}, {"channels", 7}, {"dtype", "f32"}},
      {{"batch", 2}, {"height", 32}, {"width", 32}, {"channels", 24}},  // many pixels per channel
      {{"batch", 1}, {"height", 2}, {"width", 9}, {"channels", 1}},
      {{"batch", 0}, {"height", 7}, {"width", 7}, {"channels", 8}},
  };
  // MobileNetV4-conv-small's head at 224x224: batch 1 (latency) and 256 (throughput).
  for (int64_t b : {1, 256})
    d.bench_workloads.push_back({{"batch", b}, {"height", 7}, {"width", 7}, {"channels", 960}});
  d.workload_from_call = workload_from_call;
  d.architectures = {"mobilenetv4-conv-medium", "mobilenetv4-conv-small"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("global_avg_pool", cpu, global_avg_pool_cpu);

}  // namespace
}  // namespace fk::ops
