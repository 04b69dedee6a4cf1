// add: definition (workloads, inputs, cost) and CPU reference.
// Workload fields: tokens, hidden, dtype (bf16).
#include "fk/element.h"
#include "ops/activation/activation_defs.h"
#include "ops/common/case_builder.h"
#include "ops/elementwise/add_validate.h"

namespace fk::ops {
namespace {

using A = AddArgs;

fk_status add_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_add(a, DeviceType::cpu);
    for (int64_t t = 0; t < a.a.shape[0]; ++t)
      for (int64_t h = 0; h < a.a.shape[1]; ++h) set(a.out, get(a.a, t, h) + get(a.b, t, h), t, h);
  });
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  return Json{{"tokens", a.a.shape[0]}, {"hidden", a.a.shape[1]}, {"dtype", std::string(dtype_name(a.a.dtype))}};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "elementwise";
  d.level = "L1";
  d.summary = "out = a + b, element-wise (out may be a itself)";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out), RowStride::any},
                   {"a", ArgRole::in, offsetof(A, a), RowStride::any},
                   {"b", ArgRole::in, offsetof(A, b), RowStride::any}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const ActShape s = act_shape(w, A::kName, "hidden");
    OpCase c = begin_case<A>(w, 3);
    c.tensors[0] = Tensor::empty({s.tokens, s.cols}, s.dtype);
    c.tensors[1] = random_tensor({s.tokens, s.cols}, s.dtype, seed, 1, -2.f, 2.f);
    c.tensors[2] = random_tensor({s.tokens, s.cols}, s.dtype, seed, 2, -2.f, 2.f);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double n = static_cast<double>(a.a.numel());
    return OpCost{3.0 * n * static_cast<double>(a.a.element_size()), n, DType::f32};
  };
  // The activation ops' edge shapes reach every path of the row kernel.
  d.test_workloads = activation_test_workloads("hidden");
  // BGE-M3's embedding sums (32 x 512 tokens of 1024, f16) and a ViT-L residual stream.
  d.bench_workloads = {{{"tokens", 16384}, {"hidden", 1024}, {"dtype", "f16"}},
                       {{"tokens", 512}, {"hidden", 1024}, {"dtype", "f16"}},
                       {{"tokens", 16384}, {"hidden", 4096}}};
  d.workload_from_call = workload_from_call;
  d.architectures = {"xlm_roberta"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("add", cpu, add_cpu);

}  // namespace
}  // namespace fk::ops
