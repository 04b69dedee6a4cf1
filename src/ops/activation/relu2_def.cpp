// relu2 (squared ReLU): definition (workloads, inputs, cost) and CPU reference.
#include "ops/activation/activation_defs.h"
#include "ops/activation/activation_reference.h"
#include "ops/activation/activation_validate.h"

namespace fk::ops {
namespace {

fk_status relu2_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const Relu2Args*>(args);
    validate_elementwise(a, DeviceType::cpu);
    elementwise_reference(a.out, a.input, relu2_ref);
  });
}

OpDef make_def() {
  OpDef d = elementwise_activation_def<Relu2Args>("out = max(input, 0)^2, element-wise (squared ReLU)", -4.f, 4.f,
                                                  [](Relu2Args&, const Json&) {});
  d.bench_workloads = {
      {{"tokens", 16384}, {"hidden", 14336}},
      {{"tokens", 256}, {"hidden", 14336}},
      {{"tokens", 16384}, {"hidden", 24576}},  // Nemotron-4-15B MLP width
  };
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("relu2", cpu, relu2_cpu);

}  // namespace
}  // namespace fk::ops
