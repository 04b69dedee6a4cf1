// adaln_modulate: definition (workloads, inputs, cost) and CPU reference.
// Workload fields: those of dit_defs.h, and eps (1e-6, FLUX's).
#include <cmath>

#include "fk/element.h"
#include "ops/dit/dit_defs.h"
#include "ops/dit/dit_validate.h"

namespace fk::ops {
namespace {

using A = AdaLnModulateArgs;

// Two passes in double (mean, then the variance about it), as torch's LayerNorm.
void adaln_modulate_reference(const A& a) {
  const int64_t t_count = a.input.shape[0], h = a.input.shape[1];
  if (t_count == 0) return;
  const int64_t per_sample = t_count / a.shift.shape[0];
  for (int64_t t = 0; t < t_count; ++t) {
    double mean = 0;
    for (int64_t j = 0; j < h; ++j) mean += get(a.input, t, j);
    mean /= static_cast<double>(h);
    double var = 0;
    for (int64_t j = 0; j < h; ++j) {
      const double d = get(a.input, t, j) - mean;
      var += d * d;
    }
    var /= static_cast<double>(h);
    const double rstd = 1.0 / std::sqrt(var + static_cast<double>(a.eps));
    const int64_t b = t / per_sample;
    for (int64_t j = 0; j < h; ++j) {
      const double n = (get(a.input, t, j) - mean) * rstd;
      set(a.out, n * (1.0 + get(a.scale, b, j)) + get(a.shift, b, j), t, j);
    }
  }
}

fk_status adaln_modulate_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_adaln_modulate(a, DeviceType::cpu);
    adaln_modulate_reference(a);
  });
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  return Json{{"tokens", a.input.shape[0]},
              {"hidden", a.input.shape[1]},
              {"batch", a.shift.shape[0]},
              {"eps", static_cast<double>(a.eps)},
              {"dtype", std::string(dtype_name(a.input.dtype))}};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "dit";
  d.level = "L2";
  d.summary = "out = layer_norm(input, no affine) * (1 + scale[b]) + shift[b], per-sample shift/scale (adaLN)";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out), RowStride::any},
                   {"input", ArgRole::in, offsetof(A, input), RowStride::any},
                   {"shift", ArgRole::in, offsetof(A, shift), RowStride::any},
                   {"scale", ArgRole::in, offsetof(A, scale), RowStride::any}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const DitShape s = dit_shape(w, A::kName);
    const double eps = wl_float(w, "eps", 1e-6);
    FK_CHECK(eps > 0, A::kName, " workload needs eps > 0, got ", w.dump());
    OpCase c = begin_case<A>(w, 4);
    c.tensors[0] = Tensor::empty({s.tokens, s.hidden}, s.dtype);
    // An offset, so that subtracting the mean matters.
    c.tensors[1] = random_tensor({s.tokens, s.hidden}, s.dtype, seed, 1, -1.f, 3.f);
    c.tensors[2] = random_tensor({s.batch, s.hidden}, s.dtype, seed, 2, -1.f, 1.f);
    c.tensors[3] = random_tensor({s.batch, s.hidden}, s.dtype, seed, 3, -1.f, 1.f);
    c.as<A>().eps = static_cast<float>(eps);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double n = static_cast<double>(a.input.numel()), es = static_cast<double>(a.input.element_size());
    // input read, out written, the two vectors once per sample; about 9 flops per element.
    return OpCost{2.0 * n * es + static_cast<double>(a.shift.nbytes() + a.scale.nbytes()), 9.0 * n, DType::f32};
  };
  d.test_workloads = dit_test_workloads();
  d.test_workloads.push_back({{"tokens", 3}, {"hidden", 256}, {"eps", 1e-5}});
  d.bench_workloads = flux_bench_workloads();
  d.workload_from_call = workload_from_call;
  d.architectures = {"flux"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("adaln_modulate", cpu, adaln_modulate_cpu);

}  // namespace
}  // namespace fk::ops
