// silu_and_mul: definition (workloads, inputs, cost) and CPU reference.
#include "ops/activation/activation_defs.h"
#include "ops/activation/activation_reference.h"
#include "ops/activation/activation_validate.h"

namespace fk::ops {
namespace {

fk_status silu_and_mul_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const SiluAndMulArgs*>(args);
    validate_gated(a, DeviceType::cpu);
    gated_reference(a.out, a.input, silu_ref);
  });
}

OpDef make_def() {
  OpDef d = gated_activation_def<SiluAndMulArgs>("out = silu(input[:, :d]) * input[:, d:] (SwiGLU)",
                                                 [](SiluAndMulArgs&, const Json&) {});
  d.bench_workloads = {
      {{"tokens", 16384}, {"d", 14336}},  // prefill chunk, Llama-3.1-8B / Mistral-7B
      {{"tokens", 1}, {"d", 14336}},      // single decode
      {{"tokens", 256}, {"d", 14336}},    // decode batch
      {{"tokens", 4096}, {"d", 14336}},
      {{"tokens", 16384}, {"d", 12288}},  // Qwen3-8B
  };
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("silu_and_mul", cpu, silu_and_mul_cpu);

}  // namespace
}  // namespace fk::ops
