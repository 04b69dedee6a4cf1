// relu: definition (workloads, inputs, cost) and CPU reference.
#include <string>

#include "ops/activation/activation_defs.h"
#include "ops/activation/activation_reference.h"
#include "ops/activation/activation_validate.h"

namespace fk::ops {
namespace {

// max(x, 0) with NaN passed through (NaN < 0 is false), as torch.relu.
double relu_ref(double x) { return x < 0 ? 0.0 : x; }

fk_status relu_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const ReluArgs*>(args);
    validate_elementwise(a, DeviceType::cpu);
    elementwise_reference(a.out, a.input, relu_ref);
  });
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const ReluArgs*>(args);
  return Json{
      {"tokens", a.out.shape[0]}, {"hidden", a.out.shape[1]}, {"dtype", std::string(dtype_name(a.input.dtype))}};
}

OpDef make_def() {
  OpDef d = elementwise_activation_def<ReluArgs>("out = max(input, 0), element-wise (ReLU)", -4.f, 4.f,
                                                 [](ReluArgs&, const Json&) {});
  // DLRM's MLPs at MLPerf's batch of 16384 samples: the top MLP's 1024 and 512, the bottom
  // MLP's 512 and 256 features; a batch of 2048 at 1024.
  d.bench_workloads = {
      {{"tokens", 16384}, {"hidden", 1024}},
      {{"tokens", 16384}, {"hidden", 512}},
      {{"tokens", 16384}, {"hidden", 256}},
      {{"tokens", 2048}, {"hidden", 1024}},
  };
  d.workload_from_call = workload_from_call;
  d.architectures = {"dlrm"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("relu", cpu, relu_cpu);

}  // namespace
}  // namespace fk::ops
