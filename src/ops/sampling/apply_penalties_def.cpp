// apply_penalties: definition (workloads, inputs, cost, tolerance) and CPU reference.
#include <cmath>

#include "fk/element.h"
#include "ops/common/case_builder.h"
#include "ops/sampling/logits_processors_case.h"
#include "ops/sampling/logits_processors_reference.h"
#include "ops/sampling/logits_processors_validate.h"

namespace fk::ops {
namespace {

constexpr const char* kOp = ApplyPenaltiesArgs::kName;

fk_status apply_penalties_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const ApplyPenaltiesArgs*>(args);
    validate_apply_penalties(a, DeviceType::cpu);
    const int64_t B = a.logits.shape[0], V = a.logits.shape[1];
    const auto rows = read_row_tokens(kOp, a.tokens, a.token_indptr, a.prompt_len, B, V);
    for (int64_t b = 0; b < B; ++b) {
      const double rep = get(a.repetition_penalty, b), freq = get(a.frequency_penalty, b),
                   pres = get(a.presence_penalty, b);
      FK_CHECK(std::isfinite(rep) && rep > 0, kOp, ": repetition_penalty[", b, "] must be finite and > 0, got ", rep);
      FK_CHECK(std::isfinite(freq), kOp, ": frequency_penalty[", b, "] must be finite, got ", freq);
      FK_CHECK(std::isfinite(pres), kOp, ": presence_penalty[", b, "] must be finite, got ", pres);
      std::vector<double> x = read_row(a.logits, b);
      penalize_row(x, rows[static_cast<size_t>(b)], rep, freq, pres);
      write_row(a.logits, b, x);
    }
  });
}

struct Penalties {
  float repetition, frequency, presence;
};
// Rows cycle through these: off, each penalty alone (both signs), all together.
constexpr Penalties kMixed[] = {{1.f, 0.f, 0.f},    {1.3f, 0.f, 0.f},   {0.7f, 0.f, 0.f},
                                {1.f, 0.5f, 0.f},   {1.f, -1.5f, 0.f},  {1.f, 0.f, 2.f},
                                {1.f, 0.f, -0.75f}, {1.8f, 1.1f, 0.6f}, {1.05f, -0.2f, 1.9f}};

// Workload fields: batch, vocab, max_prompt, max_output (token list lengths per row, drawn
// in [0, max]); logit_range (default 8); repetition / frequency / presence override the
// mixed per-row settings for every row.
OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const int64_t B = wl_int(w, "batch"), V = wl_int(w, "vocab");
  FK_CHECK(B >= 0 && V > 0, kOp, " workload needs batch >= 0 and vocab > 0, got ", w.dump());
  const int64_t max_prompt = wl_int(w, "max_prompt", 16), max_output = wl_int(w, "max_output", 16);
  FK_CHECK(max_prompt >= 0 && max_output >= 0, kOp, " workload needs max_prompt, max_output >= 0, got ", w.dump());
  OpCase c = begin_case<ApplyPenaltiesArgs>(w, 8);
  c.tensors[0] = processor_logits(B, V, DType::f32, static_cast<float>(wl_float(w, "logit_range", 8.0)), seed);
  TokenLists l = make_token_lists(B, V, max_prompt, max_output, seed);
  c.tensors[1] = l.tokens;
  c.tensors[2] = l.token_indptr;
  c.tensors[3] = l.prompt_len;
  for (int i = 4; i < 7; ++i) c.tensors[static_cast<size_t>(i)] = Tensor::empty({B}, DType::f32);
  for (int64_t b = 0; b < B; ++b) {
    const Penalties& p = kMixed[b % static_cast<int64_t>(std::size(kMixed))];
    set(c.tensors[4].view(), wl_float(w, "repetition", p.repetition), b);
    set(c.tensors[5].view(), wl_float(w, "frequency", p.frequency), b);
    set(c.tensors[6].view(), wl_float(w, "presence", p.presence), b);
  }
  c.tensors[7] = Tensor::empty({B, V}, DType::i32);
  c.bind(layout);
  return c;
}


OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "sampling";
  d.level = "L1";
  d.summary = "vLLM's repetition, frequency and presence penalties over each row's prompt and output tokens, in place";
  d.args_size = sizeof(ApplyPenaltiesArgs);
  d.tensor_args = {{"logits", ArgRole::inout, offsetof(ApplyPenaltiesArgs, logits), RowStride::any},
                   {"tokens", ArgRole::in, offsetof(ApplyPenaltiesArgs, tokens)},
                   {"token_indptr", ArgRole::in, offsetof(ApplyPenaltiesArgs, token_indptr)},
                   {"prompt_len", ArgRole::in, offsetof(ApplyPenaltiesArgs, prompt_len)},
                   {"repetition_penalty", ArgRole::in, offsetof(ApplyPenaltiesArgs, repetition_penalty)},
                   {"frequency_penalty", ArgRole::in, offsetof(ApplyPenaltiesArgs, frequency_penalty)},
                   {"presence_penalty", ArgRole::in, offsetof(ApplyPenaltiesArgs, presence_penalty)},
                   {"counts", ArgRole::workspace, offsetof(ApplyPenaltiesArgs, counts)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<ApplyPenaltiesArgs>();
    const double n = static_cast<double>(a.logits.numel());
    return OpCost{2.0 * 4 * n + 4.0 * static_cast<double>(a.tokens.numel()), 4.0 * n, DType::f32};
  };
  // A division or product, then two float subtractions of products: a few ulps of the
  // largest term, which may cancel to near zero.
  d.tolerance = [](const OpCase&, const TensorArg&, DType) { return Tolerance{1e-5, 1e-5}; };
  using J = Json;
  d.test_workloads = {
      J{{"batch", 9}, {"vocab", 1000}},
      J{{"batch", 3}, {"vocab", 1}},
      J{{"batch", 0}, {"vocab", 100}},
      J{{"batch", 18}, {"vocab", 7}, {"max_prompt", 5}, {"max_output", 30}},
      J{{"batch", 4}, {"vocab", 32000}, {"max_prompt", 200}, {"max_output", 100}},
      J{{"batch", 5}, {"vocab", 300}, {"max_prompt", 0}, {"max_output", 0}},
      J{{"batch", 6}, {"vocab", 500}, {"repetition", 2.0}, {"frequency", 2.0}, {"presence", -2.0}},
  };
  for (int64_t vocab : {128256, 151936})
    for (int64_t batch : {1, 64, 256})
      d.bench_workloads.push_back(J{{"batch", batch}, {"vocab", vocab}, {"max_prompt", 1024}, {"max_output", 256}});
  // Not capturable: a call's token lists are not a function of a workload's sizes.
  d.architectures = {"llama",  "mistral", "qwen2",     "qwen3",     "gemma", "gemma2",
                     "gemma3", "mixtral", "qwen3_moe", "qwen2_moe", "olmoe"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("apply_penalties", cpu, apply_penalties_cpu);

}  // namespace
}  // namespace fk::ops
