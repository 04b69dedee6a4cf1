// rms_norm: definition (workloads, inputs, cost) and CPU reference.
#include <cmath>

#include "fk/element.h"
#include "fk/ops/norm.h"
#include "ops/common/case_builder.h"
#include "ops/norm/norm_validate.h"

namespace fk::ops {
namespace {

constexpr const char* kOp = RmsNormArgs::kName;

// CPU reference, accumulating in double. `out` may be f64 (the oracle) or the input dtype.
fk_status rms_norm_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const RmsNormArgs*>(args);
    validate_rms_norm(a);
    if (a.out.dtype != DType::f64) expect_dtype(kOp, "out", a.out, a.input.dtype);
    const int64_t T = a.input.shape[0], H = a.input.shape[1];
    for (int64_t t = 0; t < T; ++t) {
      double sum_sq = 0;
      for (int64_t h = 0; h < H; ++h) {
        const double x = get(a.input, t, h);
        sum_sq += x * x;
      }
      const double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(H) + a.eps);
      for (int64_t h = 0; h < H; ++h) set(a.out, get(a.input, t, h) * inv_rms * get(a.weight, h), t, h);
    }
  });
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "norm";
  d.level = "L1";
  d.summary = "out = input * rsqrt(mean(input^2) + eps) * weight, per row";
  d.args_size = sizeof(RmsNormArgs);
  d.tensor_args = {{"out", ArgRole::out, offsetof(RmsNormArgs, out)},
                   {"input", ArgRole::in, offsetof(RmsNormArgs, input)},
                   {"weight", ArgRole::in, offsetof(RmsNormArgs, weight)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const int64_t T = wl_int(w, "tokens"), H = wl_int(w, "hidden");
    const DType dt = wl_dtype(w);
    FK_CHECK(T >= 0 && H > 0, "rms_norm workload needs tokens >= 0 and hidden > 0, got ", w.dump());
    OpCase c = begin_case<RmsNormArgs>(w, 3);
    c.tensors[0] = Tensor::empty({T, H}, dt);
    c.tensors[1] = random_tensor({T, H}, dt, seed, 1, -2.f, 2.f);
    c.tensors[2] = random_tensor({H}, dt, seed, 2, 0.5f, 1.5f);
    c.as<RmsNormArgs>().eps = static_cast<float>(wl_float(w, "eps", 1e-6));
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<RmsNormArgs>();
    const double n = static_cast<double>(a.input.numel());
    return OpCost{2.0 * n * a.input.element_size() + a.weight.nbytes(), 4.0 * n, DType::f32};
  };
  d.test_workloads = {
      {{"tokens", 1}, {"hidden", 8}},          {{"tokens", 3}, {"hidden", 4096}},
      {{"tokens", 7}, {"hidden", 5120}},       {{"tokens", 5}, {"hidden", 1000}},  // not a multiple of 8
      {{"tokens", 2}, {"hidden", 3}},          {{"tokens", 0}, {"hidden", 128}},
      {{"tokens", 33}, {"hidden", 2048}, {"dtype", "f16"}},
      {{"tokens", 9}, {"hidden", 1536}, {"dtype", "f32"}},
      {{"tokens", 4}, {"hidden", 16384}},
  };
  d.bench_workloads = {{{"tokens", 16384}, {"hidden", 4096}}, {{"tokens", 1}, {"hidden", 4096}},
                       {{"tokens", 256}, {"hidden", 4096}}, {{"tokens", 4096}, {"hidden", 5120}}};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("rms_norm", cpu, rms_norm_cpu);

}  // namespace
}  // namespace fk::ops
