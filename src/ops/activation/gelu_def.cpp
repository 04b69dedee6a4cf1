// gelu: definition (workloads, inputs, cost) and CPU reference.
// Workload fields: tokens, hidden, dtype (bf16), approximate ("none" or "tanh"; default none).
#include "ops/activation/activation_defs.h"
#include "ops/activation/activation_reference.h"
#include "ops/activation/activation_validate.h"

namespace fk::ops {
namespace {

fk_status gelu_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const GeluArgs*>(args);
    validate_elementwise(a, DeviceType::cpu);
    expect_gelu_approx(a.kName, a.approximate);
    elementwise_reference(a.out, a.input, [g = a.approximate](double x) { return gelu_ref(x, g); });
  });
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const GeluArgs*>(args);
  return Json{{"tokens", a.out.shape[0]},
              {"hidden", a.out.shape[1]},
              {"dtype", std::string(dtype_name(a.out.dtype))},
              {"approximate", a.approximate == GeluApprox::tanh ? "tanh" : "none"}};
}

OpDef make_def() {
  OpDef d = elementwise_activation_def<GeluArgs>(
      "out = gelu(input), element-wise (approximate none or tanh)", -5.f, 5.f,
      [](GeluArgs& a, const Json& w) { a.approximate = wl_gelu_approx(w, GeluArgs::kName); });
  for (const Json& w : std::vector<Json>{
           {{"tokens", 3}, {"hidden", 14336}, {"approximate", "tanh"}},
           {{"tokens", 2}, {"hidden", 3}, {"approximate", "tanh"}},
           {{"tokens", 4}, {"hidden", 1536}, {"dtype", "f32"}, {"approximate", "tanh"}},
       })
    d.test_workloads.push_back(w);
  d.bench_workloads = {
      {{"tokens", 16384}, {"hidden", 14336}},                         // un-gated MLP of that width
      {{"tokens", 16384}, {"hidden", 14336}, {"approximate", "tanh"}},
      {{"tokens", 16384}, {"hidden", 4096}},                          // ViT-L / BERT-large MLP
      {{"tokens", 256}, {"hidden", 14336}},
  };
  d.workload_from_call = workload_from_call;
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("gelu", cpu, gelu_cpu);

}  // namespace
}  // namespace fk::ops
