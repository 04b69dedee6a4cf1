// gelu_and_mul: definition (workloads, inputs, cost) and CPU reference.
// Workload fields: tokens, d, dtype (bf16), approximate ("none" or "tanh"; default none).
#include "ops/activation/activation_defs.h"
#include "ops/activation/activation_reference.h"
#include "ops/activation/activation_validate.h"

namespace fk::ops {
namespace {

fk_status gelu_and_mul_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const GeluAndMulArgs*>(args);
    validate_gated(a, DeviceType::cpu);
    expect_gelu_approx(a.kName, a.approximate);
    gated_reference(a.out, a.input, [g = a.approximate](double x) { return gelu_ref(x, g); });
  });
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const GeluAndMulArgs*>(args);
  return Json{{"tokens", a.out.shape[0]},
              {"d", a.out.shape[1]},
              {"dtype", std::string(dtype_name(a.out.dtype))},
              {"approximate", a.approximate == GeluApprox::tanh ? "tanh" : "none"}};
}

OpDef make_def() {
  OpDef d = gated_activation_def<GeluAndMulArgs>(
      "out = gelu(input[:, :d]) * input[:, d:] (GeGLU; approximate none or tanh)",
      [](GeluAndMulArgs& a, const Json& w) { a.approximate = wl_gelu_approx(w, GeluAndMulArgs::kName); });
  // Both approximations on the shapes that reach distinct CUDA paths.
  for (const Json& w : std::vector<Json>{
           {{"tokens", 3}, {"d", 14336}, {"approximate", "tanh"}},
           {{"tokens", 2}, {"d", 3}, {"approximate", "tanh"}},
           {{"tokens", 4}, {"d", 1536}, {"dtype", "f32"}, {"approximate", "tanh"}},
           {{"tokens", 33}, {"d", 2048}, {"dtype", "f16"}, {"approximate", "tanh"}},
       })
    d.test_workloads.push_back(w);
  d.bench_workloads = {
      {{"tokens", 16384}, {"d", 14336}, {"approximate", "tanh"}},  // Gemma-2-9B prefill chunk
      {{"tokens", 256}, {"d", 14336}, {"approximate", "tanh"}},    // Gemma-2-9B decode batch
      {{"tokens", 16384}, {"d", 15360}, {"approximate", "tanh"}},  // Gemma-3-12B
      {{"tokens", 16384}, {"d", 14336}, {"approximate", "none"}},  // erf GELU
  };
  d.workload_from_call = workload_from_call;
  d.architectures = {"gemma", "gemma2", "gemma3"};  // GeGLU MLPs
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("gelu_and_mul", cpu, gelu_and_mul_cpu);

}  // namespace
}  // namespace fk::ops
