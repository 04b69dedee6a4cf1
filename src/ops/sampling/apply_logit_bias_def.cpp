// apply_logit_bias: definition (workloads, inputs, cost, tolerance) and CPU reference.
#include <algorithm>
#include <cmath>
#include <limits>

#include "fk/element.h"
#include "fk/philox.h"
#include "ops/common/case_builder.h"
#include "ops/sampling/logits_processors_case.h"
#include "ops/sampling/logits_processors_reference.h"
#include "ops/sampling/logits_processors_validate.h"

namespace fk::ops {
namespace {

constexpr const char* kOp = ApplyLogitBiasArgs::kName;

fk_status apply_logit_bias_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const ApplyLogitBiasArgs*>(args);
    validate_apply_logit_bias(a, DeviceType::cpu);
    const int64_t B = a.out.shape[0], V = a.out.shape[1];
    const auto rows = read_packed_rows(kOp, "ids", a.ids, "indptr", a.indptr, B, V);
    for (int64_t i = 0; i < a.bias.numel(); ++i) {
      const double x = get(a.bias, i);
      FK_CHECK(std::isfinite(x) || x == -std::numeric_limits<double>::infinity(), kOp, ": bias[", i,
               "] must be finite or -inf, got ", x);
    }
    int64_t entry = 0;
    for (int64_t b = 0; b < B; ++b) {
      const auto& ids = rows[static_cast<size_t>(b)];
      std::vector<double> bias;
      for (size_t k = 0; k < ids.size(); ++k) bias.push_back(get(a.bias, entry++));
      std::vector<double> x = read_row(a.logits, b);
      bias_row(x, ids, bias);
      write_row(a.out, b, x);
    }
  });
}

// Workload fields: batch, vocab, dtype (of the logits: f32 | bf16, default f32), max_entries
// (per row, drawn in [0, max], default 8; some rows repeat an id), logit_range (default 8).
// Biases are uniform in [-100, 100] (OpenAI's range), one in eight -inf (a ban).
OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const int64_t B = wl_int(w, "batch"), V = wl_int(w, "vocab"), max_entries = wl_int(w, "max_entries", 8);
  FK_CHECK(B >= 0 && V > 0 && max_entries >= 0, kOp, " workload needs batch >= 0, vocab > 0, max_entries >= 0, got ",
           w.dump());
  const DType dt = wl_dtype(w, "dtype", DType::f32);
  OpCase c = begin_case<ApplyLogitBiasArgs>(w, 5);
  c.tensors[0] = Tensor::empty({B, V}, DType::f32);
  c.tensors[1] = processor_logits(B, V, dt, static_cast<float>(wl_float(w, "logit_range", 8.0)), seed);
  std::vector<int32_t> ids, indptr{0};
  Tensor bias = Tensor::empty({B * max_entries}, DType::f32);
  uint64_t i = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = philox_int(kShapeSeed, 30, static_cast<uint64_t>(b), 0, max_entries + 1);  // shape: workload only
    for (int64_t k = 0; k < n; ++k, ++i) {
      // Every third row's second entry repeats its first id: repeated ids add up.
      const bool repeat = b % 3 == 2 && k == 1;
      ids.push_back(repeat ? ids.back() : static_cast<int32_t>(philox_int(seed, 31, i, 0, V)));
      const bool ban = philox_int(seed, 32, i, 0, 8) == 0;
      const double x = ban ? -std::numeric_limits<double>::infinity() : -100.0 + 200.0 * philox_uniform(seed, 33, i);
      set(bias.view(), x, static_cast<int64_t>(ids.size()) - 1);
    }
    indptr.push_back(static_cast<int32_t>(ids.size()));
  }
  c.tensors[2] = i32_tensor(ids);
  c.tensors[3] = Tensor::empty({static_cast<int64_t>(ids.size())}, DType::f32);
  for (size_t k = 0; k < ids.size(); ++k)
    set(c.tensors[3].view(), get(bias.view(), static_cast<int64_t>(k)), static_cast<int64_t>(k));
  c.tensors[4] = i32_tensor(indptr);
  c.bind(layout);
  return c;
}


OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "sampling";
  d.level = "L1";
  d.summary = "out = logits as f32 plus per-row token biases (OpenAI's logit_bias; -inf bans min_tokens' stop ids)";
  d.args_size = sizeof(ApplyLogitBiasArgs);
  d.tensor_args = {{"out", ArgRole::out, offsetof(ApplyLogitBiasArgs, out)},
                   {"logits", ArgRole::in, offsetof(ApplyLogitBiasArgs, logits), RowStride::any},
                   {"ids", ArgRole::in, offsetof(ApplyLogitBiasArgs, ids)},
                   {"bias", ArgRole::in, offsetof(ApplyLogitBiasArgs, bias)},
                   {"indptr", ArgRole::in, offsetof(ApplyLogitBiasArgs, indptr)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<ApplyLogitBiasArgs>();
    const double n = static_cast<double>(a.out.numel());
    return OpCost{n * (4.0 + static_cast<double>(a.logits.element_size())) + 8.0 * static_cast<double>(a.ids.numel()),
                  static_cast<double>(a.ids.numel()), DType::f32};
  };
  // One float addition per entry, of |bias| <= 100 (half an ulp: 4e-6); a repeated id adds
  // several, in any order on the GPU: the bound grows with the entries a row may repeat.
  d.tolerance = [](const OpCase& c, const TensorArg&, DType) {
    const auto& a = c.as<ApplyLogitBiasArgs>();
    int64_t most = 1;
    for (int64_t b = 0; b < a.out.shape[0]; ++b)
      most = std::max(most, get_index(a.indptr, b + 1) - get_index(a.indptr, b));
    return Tolerance{1e-5 * static_cast<double>(most), 1e-6};
  };
  using J = Json;
  d.test_workloads = {
      J{{"batch", 9}, {"vocab", 1000}},
      J{{"batch", 3}, {"vocab", 1}},
      J{{"batch", 0}, {"vocab", 100}},
      J{{"batch", 6}, {"vocab", 7}, {"max_entries", 20}},
      J{{"batch", 4}, {"vocab", 32000}, {"dtype", "bf16"}, {"max_entries", 300}},
      J{{"batch", 5}, {"vocab", 300}, {"max_entries", 0}},
  };
  for (int64_t vocab : {128256, 151936})
    for (int64_t batch : {1, 64, 256}) d.bench_workloads.push_back(J{{"batch", batch}, {"vocab", vocab}});
  // Not capturable: a call's token lists are not a function of a workload's sizes.
  d.architectures = {"llama",  "mistral", "qwen2",     "qwen3",     "gemma", "gemma2",
                     "gemma3", "mixtral", "qwen3_moe", "qwen2_moe", "olmoe"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("apply_logit_bias", cpu, apply_logit_bias_cpu);

}  // namespace
}  // namespace fk::ops
