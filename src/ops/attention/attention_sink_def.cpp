// attention_sink_rescale (fk/ops/attention_sink.h): definition (workloads, inputs, cost)
// and the CPU reference in double (in place). Workload fields: tokens, heads, head_dim,
// dtype (bf16). The log-sum-exps are drawn around the sinks' range so that the scale
// covers both ends of the sigmoid (a sink that dominates the row, one that barely counts).
#include <cmath>

#include "fk/element.h"
#include "ops/attention/attention_sink_validate.h"
#include "ops/common/case_builder.h"

namespace fk::ops {
namespace {

using A = AttentionSinkRescaleArgs;

fk_status attention_sink_rescale_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_attention_sink_rescale(a, DeviceType::cpu);
    const double ln2 = std::log(2.0);
    for (int64_t t = 0; t < a.out.shape[0]; ++t)
      for (int64_t h = 0; h < a.out.shape[1]; ++h) {
        // sigmoid(x) = 1 / (1 + exp(-x)): exactly 0 for a row without keys (lse = -inf).
        const double x = get(a.lse, t, h) * ln2 - get(a.sinks, h);
        const double scale = 1.0 / (1.0 + std::exp(-x));
        for (int64_t d = 0; d < a.out.shape[2]; ++d) set(a.out, get(a.out, t, h, d) * scale, t, h, d);
      }
  });
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "attention";
  d.level = "L1";
  d.summary = "out *= sigmoid(lse * ln2 - sinks[h]) per token and head, in place (gpt-oss's attention sinks)";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::inout, offsetof(A, out), RowStride::any},
                   {"lse", ArgRole::in, offsetof(A, lse)},
                   {"sinks", ArgRole::in, offsetof(A, sinks)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const int64_t T = wl_int(w, "tokens"), H = wl_int(w, "heads"), D = wl_int(w, "head_dim");
    FK_CHECK(T >= 0 && H > 0 && D > 0, A::kName, " workload needs tokens >= 0, heads > 0 and head_dim > 0, got ",
             w.dump());
    const DType dtype = wl_dtype(w);
    OpCase c = begin_case<A>(w, 3);
    c.tensors[0] = random_tensor({T, H, D}, dtype, seed, 1, -2.f, 2.f);
    // Base-2 log-sum-exps of a few to a few thousand keys, sinks as gpt-oss learns them.
    c.tensors[1] = random_tensor({T, H}, DType::f32, seed, 2, -6.f, 14.f);
    c.tensors[2] = random_tensor({H}, DType::f32, seed, 3, -4.f, 9.f);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double n = static_cast<double>(a.out.numel()), es = static_cast<double>(a.out.element_size());
    // out read and written once, one lse per row, one sink per head; a multiply per
    // element and a sigmoid (about 4 flops) per row.
    return OpCost{2.0 * n * es + static_cast<double>(a.lse.nbytes() + a.sinks.nbytes()),
                  n + 4.0 * static_cast<double>(a.lse.numel()), DType::f32};
  };
  d.test_workloads = {{{"tokens", 1}, {"heads", 1}, {"head_dim", 64}},
                      {{"tokens", 7}, {"heads", 8}, {"head_dim", 64}},
                      {{"tokens", 13}, {"heads", 6}, {"head_dim", 40}, {"dtype", "f32"}},
                      {{"tokens", 5}, {"heads", 4}, {"head_dim", 128}, {"dtype", "f16"}},
                      {{"tokens", 3}, {"heads", 3}, {"head_dim", 3}},
                      {{"tokens", 0}, {"heads", 4}, {"head_dim", 64}}};
  // gpt-oss-120b / 20b: 64 query heads of 64; decode batches and prefill chunks.
  for (int64_t t : {1, 64, 256, 8192}) d.bench_workloads.push_back({{"tokens", t}, {"heads", 64}, {"head_dim", 64}});
  d.workload_from_call = [](const void* args) {
    const auto& a = *static_cast<const A*>(args);
    return Json{{"tokens", a.out.shape[0]}, {"heads", a.out.shape[1]}, {"head_dim", a.out.shape[2]},
                {"dtype", std::string(dtype_name(a.out.dtype))}};
  };
  d.architectures = {"gpt_oss"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("attention_sink_rescale", cpu, attention_sink_rescale_cpu);

}  // namespace
}  // namespace fk::ops
