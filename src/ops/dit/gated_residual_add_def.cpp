// gated_residual_add: definition (workloads, inputs, cost) and CPU reference (in place).
#include "fk/element.h"
#include "ops/dit/dit_defs.h"
#include "ops/dit/dit_validate.h"

namespace fk::ops {
namespace {

using A = GatedResidualAddArgs;

void gated_residual_add_reference(const A& a) {
  const int64_t t_count = a.input.shape[0], h = a.input.shape[1];
  if (t_count == 0) return;
  const int64_t per_sample = t_count / a.gate.shape[0];
  for (int64_t t = 0; t < t_count; ++t)
    for (int64_t j = 0; j < h; ++j)
      set(a.out, get(a.out, t, j) + get(a.gate, t / per_sample, j) * get(a.input, t, j), t, j);
}

fk_status gated_residual_add_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_gated_residual_add(a, DeviceType::cpu);
    gated_residual_add_reference(a);
  });
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  return Json{{"tokens", a.input.shape[0]},
              {"hidden", a.input.shape[1]},
              {"batch", a.gate.shape[0]},
              {"dtype", std::string(dtype_name(a.input.dtype))}};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "dit";
  d.level = "L1";
  d.summary = "out += gate[b] * input, in place, a per-sample gate vector (adaLN-Zero's gated residual)";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::inout, offsetof(A, out), RowStride::any},
                   {"input", ArgRole::in, offsetof(A, input), RowStride::any},
                   {"gate", ArgRole::in, offsetof(A, gate), RowStride::any}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const DitShape s = dit_shape(w, A::kName);
    OpCase c = begin_case<A>(w, 3);
    c.tensors[0] = random_tensor({s.tokens, s.hidden}, s.dtype, seed, 1, -2.f, 2.f);
    c.tensors[1] = random_tensor({s.tokens, s.hidden}, s.dtype, seed, 2, -2.f, 2.f);
    c.tensors[2] = random_tensor({s.batch, s.hidden}, s.dtype, seed, 3, -1.5f, 1.5f);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double n = static_cast<double>(a.input.numel()), es = static_cast<double>(a.input.element_size());
    // out read and written, input read, the gate once per sample; a multiply-add an element.
    return OpCost{3.0 * n * es + static_cast<double>(a.gate.nbytes()), 2.0 * n, DType::f32};
  };
  d.test_workloads = dit_test_workloads();
  d.bench_workloads = flux_bench_workloads();
  d.workload_from_call = workload_from_call;
  d.architectures = {"flux"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("gated_residual_add", cpu, gated_residual_add_cpu);

}  // namespace
}  // namespace fk::ops
