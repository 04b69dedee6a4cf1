// grn: definition (workloads from ConvNeXt V2's blocks, inputs, cost) and the CPU reference,
// which is also the CPU implementation: each channel's squares summed in double over the
// image, its norm and the image's mean norm in double, out computed in double and rounded
// once to the output dtype.
//
// Workload fields: batch (1), height, width, channels, dtype (f16). The bench workloads are
// ConvNeXtV2-B's four stages at 384 x 384 (the GRN sits on the 4x-wide MLP activations).
#include <cmath>
#include <string>
#include <vector>

#include "fk/element.h"
#include "ops/common/case_builder.h"
#include "ops/conv/conv_validate.h"

namespace fk::ops {
namespace {

using A = GrnArgs;

void grn_reference(const A& a) {
  const TensorView& in = a.input;
  const int64_t N = in.shape[0], H = in.shape[1], W = in.shape[2], C = in.shape[3];
  std::vector<double> g(static_cast<size_t>(C));
  for (int64_t n = 0; n < N; ++n) {
    double mean = 0;
    for (int64_t c = 0; c < C; ++c) {
      double sum = 0;
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          const double x = get(in, n, h, w, c);
          sum += x * x;
        }
      g[static_cast<size_t>(c)] = std::sqrt(sum);
      mean += g[static_cast<size_t>(c)] / static_cast<double>(C);
    }
    for (int64_t c = 0; c < C; ++c) {
      const double scale = g[static_cast<size_t>(c)] / (mean + 1e-6);
      set(a.scale, scale, n, c);
      const double gamma = get(a.gamma, c), beta = get(a.beta, c);
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          const double x = get(in, n, h, w, c);
          set(a.out, gamma * (x * scale) + beta + x, n, h, w, c);
        }
    }
  }
}

fk_status grn_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_grn(a, DeviceType::cpu);
    grn_reference(a);
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
  d.summary =
      "ConvNeXt V2's Global Response Normalization over NHWC activations: each channel scaled by its "
      "image-wide L2 norm over the mean norm, gamma, beta and the input added";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out)},
                   {"scale", ArgRole::out, offsetof(A, scale)},
                   {"input", ArgRole::in, offsetof(A, input)},
                   {"gamma", ArgRole::in, offsetof(A, gamma)},
                   {"beta", ArgRole::in, offsetof(A, beta)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const int64_t N = wl_int(w, "batch", 1), H = wl_int(w, "height"), W = wl_int(w, "width"), C = wl_int(w, "channels");
    const DType dt = wl_dtype(w, "dtype", DType::f16);
    FK_CHECK(N >= 0 && H >= 1 && W >= 1 && C >= 1, A::kName, " workload needs positive sizes, got ", w.dump());
    OpCase c = begin_case<A>(w, 5);
    c.tensors[0] = Tensor::empty({N, H, W, C}, dt);
    c.tensors[1] = Tensor::empty({N, C}, DType::f32);
    // GELU outputs: mostly small positive values with a negative tail.
    c.tensors[2] = random_tensor({N, H, W, C}, dt, seed, 2, -0.2f, 2.f);
    c.tensors[3] = random_tensor({C}, dt, seed, 3, -1.f, 1.f);
    c.tensors[4] = random_tensor({C}, dt, seed, 4, -0.5f, 0.5f);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    // Two passes over the input (the norms, then the output) and one write.
    const double bytes = 2.0 * static_cast<double>(a.input.nbytes()) + static_cast<double>(a.out.nbytes());
    return OpCost{bytes, 5.0 * static_cast<double>(a.input.numel()), DType::f32};
  };
  d.test_workloads = {
      {{"batch", 2}, {"height", 7}, {"width", 7}, {"channels", 64}},
      {{"batch", 3}, {"height", 1}, {"width", 1}, {"channels", 40}},                     // one pixel
      {{"batch", 2}, {"height", 5}, {"width", 3}, {"channels", 37}, {"dtype", "bf16"}},  // odd C
      {{"batch", 1}, {"height", 13}, {"width", 11}, {"channels", 7}, {"dtype", "f32"}},
      {{"batch", 1}, {"height", 48}, {"width", 40}, {"channels", 96}},  // many pixels per channel
      {{"batch", 2}, {"height", 6}, {"width", 6}, {"channels", 1}},     // the mean is the norm itself
      {{"batch", 1}, {"height", 3}, {"width", 4}, {"channels", 520}},   // channels past one block
      {{"batch", 0}, {"height", 7}, {"width", 7}, {"channels", 8}},
  };
  // ConvNeXtV2-B at 384 x 384: the MLP's 4C channels at each stage's resolution.
  for (int64_t b : {1, 32})
    for (const auto& [hw, c] : std::vector<std::pair<int64_t, int64_t>>{{96, 512}, {48, 1024}, {24, 2048}, {12, 4096}})
      d.bench_workloads.push_back({{"batch", b}, {"height", hw}, {"width", hw}, {"channels", c}});
  d.workload_from_call = workload_from_call;
  d.architectures = {"convnextv2-base"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("grn", cpu, grn_cpu);

}  // namespace
}  // namespace fk::ops
