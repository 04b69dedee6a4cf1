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

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const SiluAndMulArgs*>(args);
  return Json{{"tokens", a.out.shape[0]}, {"d", a.out.shape[1]}, {"dtype", std::string(dtype_name(a.out.dtype))}};
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
  d.workload_from_call = workload_from_call;
  // Dense SwiGLU MLPs: every layer of these, the dense layers of the MoE ones and Qwen2-MoE's
  // shared expert.
  d.architectures = {"llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "qwen2_moe"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("silu_and_mul", cpu, silu_and_mul_cpu);

}  // namespace
}  // namespace fk::ops
