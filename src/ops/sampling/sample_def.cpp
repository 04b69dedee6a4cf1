// sample: definition (workloads, inputs, cost, output check) and CPU reference.
#include <cmath>

#include "fk/element.h"
#include "fk/philox.h"
#include "ops/common/case_builder.h"
#include "ops/sampling/sample_reference.h"
#include "ops/sampling/sampling_validate.h"

namespace fk::ops {
namespace {

constexpr const char* kOp = SampleArgs::kName;

// How far (in cumulative probability) u may lie outside the interval of a token that is not
// the reference's: the GPU's float weights move interval boundaries by ~1e-6 at most.
constexpr double kCdfEps = 1e-5;

fk_status sample_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const SampleArgs*>(args);
    validate_sample(a);
    expect_sample_device(a, DeviceType::cpu);
    const int64_t B = a.logits.shape[0];
    for (int64_t b = 0; b < B; ++b)
      set(a.out, static_cast<double>(sample_row(sample_row_logits(a, b), sample_params(a, b), b).token), b);
  });
}

// Every row's token is the reference's, or one the reference could have drawn for a u
// within kCdfEps, with top-p / min-p cuts within rounding (judge_sampled_row); never a
// token outside the filters, and greedy rows exactly.
std::string check_sampled_tokens(const OpCase& host, const OpCase&, const OpCase& actual) {
  const auto& a = host.as<SampleArgs>();
  const TensorView& got = actual.as<SampleArgs>().out;
  const int64_t B = a.logits.shape[0], V = a.logits.shape[1];
  std::string why;
  int reported = 0;
  for (int64_t b = 0; b < B && reported < 5; ++b) {
    const int64_t token = get_index(got, b);
    std::string row_why;
    if (token < 0 || token >= V) {
      row_why = concat("token ", token, " is outside the vocabulary [0, ", V, ")");
    } else {
      row_why = judge_sampled_row(sample_row_logits(a, b), sample_params(a, b), b, token, kCdfEps);
    }
    if (!row_why.empty()) {
      why += concat("output 'out' row ", b, ": ", row_why, "; ");
      ++reported;
    }
  }
  return why;
}

struct RowConfig {
  float temperature;
  int32_t top_k;  // kAll: >= V (off)
  float top_p;
  float min_p;
};
constexpr int32_t kAll = 1 << 30;
// The "mixed" mode cycles rows through these: greedy, each filter alone, all together, and
// the settings that must reduce to greedy.
constexpr RowConfig kMixed[] = {
    {0.f, 0, 1.f, 0.f},       {1.f, 0, 1.f, 0.f},          {0.7f, 50, 1.f, 0.f},  {1.f, 0, 0.9f, 0.f},
    {0.8f, 0, 1.f, 0.05f},    {1.2f, 40, 0.95f, 0.02f},    {0.6f, 1, 1.f, 0.f},   {1.f, 0, 1e-6f, 0.f},
    {0.9f, kAll, 0.5f, 0.f},  {2.f, 1000, 0.99f, 0.001f},
};

// Workload fields: batch, vocab; dtype (f32 | bf16 logits, default f32); logit_range
// (logits uniform in [-r, r], default 8); temperature / top_k / top_p / min_p override the
// mixed per-row settings for every row.
OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const int64_t B = wl_int(w, "batch"), V = wl_int(w, "vocab");
  FK_CHECK(B >= 0 && V > 0, "sample workload needs batch >= 0 and vocab > 0, got ", w.dump());
  const DType dt = wl_dtype(w, "dtype", DType::f32);
  const auto range = static_cast<float>(wl_float(w, "logit_range", 8.0));
  OpCase c = begin_case<SampleArgs>(w, 8);
  c.tensors[0] = Tensor::empty({B}, DType::i64);
  c.tensors[1] = random_tensor({B, V}, dt, seed, 1, -range, range);
  for (int i = 2; i < 8; ++i) {
    const DType pt = i == 3 ? DType::i32 : (i >= 6 ? DType::i64 : DType::f32);
    c.tensors[static_cast<size_t>(i)] = Tensor::empty({B}, pt);
  }
  for (int64_t b = 0; b < B; ++b) {
    const RowConfig& cfg = kMixed[b % static_cast<int64_t>(std::size(kMixed))];
    set(c.tensors[2].view(), wl_float(w, "temperature", cfg.temperature), b);
    set(c.tensors[3].view(), static_cast<double>(wl_int(w, "top_k", cfg.top_k)), b);
    set(c.tensors[4].view(), wl_float(w, "top_p", cfg.top_p), b);
    set(c.tensors[5].view(), wl_float(w, "min_p", cfg.min_p), b);
    const uint64_t s = static_cast<uint64_t>(philox_u32(seed, 10, 2 * b)) << 32 | philox_u32(seed, 10, 2 * b + 1);
    c.tensors[6].data_as<int64_t>()[b] = static_cast<int64_t>(s);
    c.tensors[7].data_as<int64_t>()[b] = philox_int(seed, 11, static_cast<uint64_t>(b), 0, int64_t{1} << 30);
  }
  c.bind(layout);
  return c;
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const SampleArgs*>(args);
  return Json{{"batch", a.logits.shape[0]}, {"vocab", a.logits.shape[1]},
              {"dtype", std::string(dtype_name(a.logits.dtype))}};
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "sampling";
  d.level = "L1";
  d.summary = "token per row of logits: greedy, or temperature + top-k + top-p + min-p, Philox draw";
  d.args_size = sizeof(SampleArgs);
  d.tensor_args = {{"out", ArgRole::out, offsetof(SampleArgs, out)},
                   {"logits", ArgRole::in, offsetof(SampleArgs, logits), RowStride::any},
                   {"temperature", ArgRole::in, offsetof(SampleArgs, temperature)},
                   {"top_k", ArgRole::in, offsetof(SampleArgs, top_k)},
                   {"top_p", ArgRole::in, offsetof(SampleArgs, top_p)},
                   {"min_p", ArgRole::in, offsetof(SampleArgs, min_p)},
                   {"seed", ArgRole::in, offsetof(SampleArgs, seed)},
                   {"offset", ArgRole::in, offsetof(SampleArgs, offset)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<SampleArgs>();
    const double params = static_cast<double>(a.logits.shape[0]) * (4 * 4 + 3 * 8);
    return OpCost{static_cast<double>(a.logits.nbytes()) + params, 0.0, DType::f32};
  };
  d.check_outputs = check_sampled_tokens;
  using J = Json;
  d.test_workloads = {
      J{{"batch", 10}, {"vocab", 1000}},
      J{{"batch", 3}, {"vocab", 1}},
      J{{"batch", 10}, {"vocab", 7}, {"dtype", "bf16"}},
      J{{"batch", 6}, {"vocab", 32000}, {"dtype", "bf16"}},
      J{{"batch", 4}, {"vocab", 50257}},
      J{{"batch", 0}, {"vocab", 100}},
      J{{"batch", 4}, {"vocab", 4099}, {"temperature", 0}},
      J{{"batch", 6}, {"vocab", 2000}, {"temperature", 1.0}, {"top_k", 0}, {"top_p", 1.0}, {"min_p", 0.0}},
      // bf16 logits in a narrow range: thousands of exact ties, broken by token id.
      J{{"batch", 10}, {"vocab", 5000}, {"dtype", "bf16"}, {"logit_range", 0.05}},
      // Peaked distribution: a low temperature makes top-p cut after a few tokens.
      J{{"batch", 10}, {"vocab", 3000}, {"logit_range", 30.0}},
  };
  // Llama-3 and Qwen vocabularies at decode batch sizes: mixed settings, and greedy alone.
  for (int64_t vocab : {128256, 151936}) {
    for (int64_t batch : {1, 64, 256}) d.bench_workloads.push_back(J{{"batch", batch}, {"vocab", vocab}});
    d.bench_workloads.push_back(J{{"batch", 256}, {"vocab", vocab}, {"temperature", 0}});
    d.bench_workloads.push_back(J{{"batch", 64}, {"vocab", vocab}, {"temperature", 0.7}, {"top_p", 0.9}});
  }
  d.workload_from_call = workload_from_call;
  // Every engine step's next tokens.
  d.architectures = {"llama",  "mistral", "qwen2",     "qwen3",     "gemma", "gemma2",
                     "gemma3", "mixtral", "qwen3_moe", "qwen2_moe", "olmoe"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("sample", cpu, sample_cpu);

}  // namespace
}  // namespace fk::ops
