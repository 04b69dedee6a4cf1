// silu: definition (workloads, inputs, cost) and CPU reference.
#include <cmath>

#include "ops/activation/activation_defs.h"
#include "ops/activation/activation_reference.h"
#include "ops/dit/dit_defs.h"
#include "ops/dit/dit_validate.h"

namespace fk::ops {
namespace {

// x / (1 + exp(-x)) in double: exp overflows to inf for x < -709 and the quotient is then
// -0, the limit; NaN propagates.
double silu_ref(double x) { return x / (1.0 + std::exp(-x)); }

fk_status silu_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const SiluArgs*>(args);
    validate_silu(a, DeviceType::cpu);
    elementwise_reference(a.out, a.input, silu_ref);
  });
}

// The workload of a captured call (FLUX.1's conditioning): the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const SiluArgs*>(args);
  return Json{{"tokens", a.out.shape[0]}, {"hidden", a.out.shape[1]}, {"dtype", std::string(dtype_name(a.out.dtype))}};
}

OpDef make_def() {
  OpDef d = elementwise_activation_def<SiluArgs>(
      "out = input / (1 + exp(-input)), element-wise (a DiT's conditioning activation)", -8.f, 8.f,
      [](SiluArgs&, const Json&) {});
  d.family = "dit";
  d.workload_from_call = workload_from_call;
  // FLUX.1's conditioning vector (batch 1 and a CFG-doubled 2, hidden 3072), run before
  // every adaLN linear; its timestep embedder's hidden row; a wide activation.
  d.bench_workloads = {{{"tokens", 1}, {"hidden", 3072}},
                       {{"tokens", 2}, {"hidden", 3072}},
                       {{"tokens", 4096}, {"hidden", 3072}}};
  d.architectures = {"flux"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("silu", cpu, silu_cpu);

}  // namespace
}  // namespace fk::ops
