// logit_softcap: definition (workloads, inputs, cost) and CPU reference (in place).
// Workload fields: tokens, vocab, dtype (f32: the LM head's logits), cap (30, Gemma 2).
#include <cmath>

#include "ops/activation/activation_defs.h"
#include "ops/activation/activation_validate.h"
#include "fk/element.h"

namespace fk::ops {
namespace {

constexpr const char* kOp = LogitSoftcapArgs::kName;

fk_status logit_softcap_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const LogitSoftcapArgs*>(args);
    validate_logit_softcap(a, DeviceType::cpu);
    const double cap = a.cap;
    for (int64_t t = 0; t < a.logits.shape[0]; ++t)
      for (int64_t v = 0; v < a.logits.shape[1]; ++v) set(a.logits, cap * std::tanh(get(a.logits, t, v) / cap), t, v);
  });
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const LogitSoftcapArgs*>(args);
  return Json{{"tokens", a.logits.shape[0]}, {"vocab", a.logits.shape[1]}, {"cap", a.cap},
              {"dtype", std::string(dtype_name(a.logits.dtype))}};
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "activation";
  d.level = "L1";
  d.summary = "logits = cap * tanh(logits / cap), in place (Gemma 2 final logit soft-capping)";
  d.args_size = sizeof(LogitSoftcapArgs);
  d.tensor_args = {{"logits", ArgRole::inout, offsetof(LogitSoftcapArgs, logits), RowStride::any}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    Json wd = w;
    if (!wd.contains("dtype")) wd["dtype"] = "f32";
    const ActShape s = act_shape(wd, kOp, "vocab");
    const double cap = wl_float(w, "cap", 30.0);
    FK_CHECK(cap > 0, kOp, " workload needs cap > 0, got ", w.dump());
    OpCase c = begin_case<LogitSoftcapArgs>(w, 1);
    // Up to twice the cap, so that the saturating part of tanh is exercised.
    c.tensors[0] = random_tensor({s.tokens, s.cols}, s.dtype, seed, 1, -2.f * static_cast<float>(cap),
                                 2.f * static_cast<float>(cap));
    c.as<LogitSoftcapArgs>().cap = static_cast<float>(cap);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<LogitSoftcapArgs>();
    const double n = static_cast<double>(a.logits.numel());
    return OpCost{2.0 * n * a.logits.element_size(), 6.0 * n, DType::f32};
  };
  d.test_workloads = activation_test_workloads("vocab");
  d.test_workloads.push_back({{"tokens", 2}, {"vocab", 256000}, {"cap", 50.0}});
  d.test_workloads.push_back({{"tokens", 3}, {"vocab", 1000}, {"dtype", "bf16"}});
  d.bench_workloads = {
      {{"tokens", 256}, {"vocab", 256000}},  // Gemma-2 vocabulary, a decode batch's logits
      {{"tokens", 1}, {"vocab", 256000}},
      {{"tokens", 256}, {"vocab", 256000}, {"dtype", "bf16"}},
  };
  d.workload_from_call = workload_from_call;
  d.architectures = {"gemma2"};  // its final logit soft-capping
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("logit_softcap", cpu, logit_softcap_cpu);

}  // namespace
}  // namespace fk::ops
