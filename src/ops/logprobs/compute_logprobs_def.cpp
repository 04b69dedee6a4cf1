// compute_logprobs: definition (workloads, inputs, cost) and CPU reference.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "fk/element.h"
#include "fk/philox.h"
#include "ops/common/case_builder.h"
#include "ops/logprobs/logprobs_validate.h"

namespace fk::ops {
namespace {

constexpr const char* kOp = ComputeLogprobsArgs::kName;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// One row: log-sum-exp in double over the finite logits, then the sampled token's and the
// top K tokens' logprobs.
void logprobs_row(const ComputeLogprobsArgs& a, int64_t n, std::vector<double>& x, std::vector<int64_t>& order) {
  const int64_t V = a.logits.shape[1], K = a.topk_ids.shape[1];
  double m = kNegInf;
  for (int64_t v = 0; v < V; ++v) {
    const double xv = get(a.logits, n, v);
    FK_CHECK(!std::isnan(xv) && xv != std::numeric_limits<double>::infinity(), kOp, ": logits row ", n, " token ", v,
             " is ", xv, " (logits must be finite or -inf)");
    x[static_cast<size_t>(v)] = xv;
    m = std::max(m, xv);
  }
  FK_CHECK(std::isfinite(m), kOp, ": logits row ", n, " has no finite logit");
  double s = 0;
  for (double xv : x) s += std::exp(xv - m);  // exp(-inf) = 0
  const double lse = m + std::log(s);

  const int64_t id = get_index(a.sampled_ids, n);
  FK_CHECK(id >= 0 && id < V, kOp, ": sampled_ids[", n, "] is ", id, ", outside the vocabulary [0, ", V, ")");
  set(a.sampled_logprob, x[static_cast<size_t>(id)] - lse, n);
  if (K == 0) return;
  std::iota(order.begin(), order.end(), int64_t{0});
  std::partial_sort(order.begin(), order.begin() + K, order.end(), [&](int64_t i, int64_t j) {
    const double xi = x[static_cast<size_t>(i)], xj = x[static_cast<size_t>(j)];
    return xi > xj || (xi == xj && i < j);
  });
  for (int64_t k = 0; k < K; ++k) {
    const int64_t t = order[static_cast<size_t>(k)];
    set(a.topk_ids, static_cast<double>(t), n, k);
    set(a.topk_logprobs, x[static_cast<size_t>(t)] - lse, n, k);
  }
}

fk_status compute_logprobs_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const ComputeLogprobsArgs*>(args);
    validate_compute_logprobs(a, DeviceType::cpu);
    const int64_t N = a.logits.shape[0], V = a.logits.shape[1];
    std::vector<double> x(static_cast<size_t>(V));
    std::vector<int64_t> order(static_cast<size_t>(V));
    for (int64_t n = 0; n < N; ++n) logprobs_row(a, n, x, order);
  });
}

// Workload fields: batch, vocab, k (top alternatives, default 5); dtype (f32 | bf16 logits,
// default f32); logit_range (uniform in [-r, r], default 8); masked (fraction of logits set
// to -inf; token b % vocab of row b stays finite); pattern "hot_stride": the tokens with
// (id / 8) % 1024 < 16 are raised by 4r, which puts every large logit in the strides of
// one warp of a kernel that gives each row to a block of 1024 threads reading 16 bytes per
// thread and step (the CUDA baseline's slow path for rows whose top is not spread out).
// Sampled ids are uniform in [0, vocab), so some land on -inf logits.
OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const int64_t N = wl_int(w, "batch"), V = wl_int(w, "vocab"), K = wl_int(w, "k", 5);
  FK_CHECK(N >= 0 && V > 0 && K >= 0 && K <= std::min<int64_t>(V, kMaxTopLogprobs),
           "compute_logprobs workload needs batch >= 0, vocab > 0 and 0 <= k <= min(vocab, 20), got ", w.dump());
  const DType dt = wl_dtype(w, "dtype", DType::f32);
  const auto range = static_cast<float>(wl_float(w, "logit_range", 8.0));
  const double masked = wl_float(w, "masked", 0.0);
  const std::string pattern = wl_string(w, "pattern", "uniform");
  FK_CHECK(pattern == "uniform" || pattern == "hot_stride", "compute_logprobs workload: unknown pattern '", pattern,
           "' (uniform | hot_stride)");
  OpCase c = begin_case<ComputeLogprobsArgs>(w, 5);
  c.tensors[0] = Tensor::empty({N}, DType::f32);
  c.tensors[1] = Tensor::empty({N, K}, DType::i32);
  c.tensors[2] = Tensor::empty({N, K}, DType::f32);
  c.tensors[3] = random_tensor({N, V}, dt, seed, 1, -range, range);
  c.tensors[4] = random_int_tensor({N}, DType::i64, seed, 2, 0, V);
  const TensorView x = c.tensors[3].view();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t v = 0; v < V; ++v) {
      if (pattern == "hot_stride" && (v / 8) % 1024 < 16) set(x, get(x, n, v) + 4.0 * range, n, v);
      if (masked > 0 && v != n % V &&
          philox_uniform(seed, 3, static_cast<uint64_t>(n * V + v)) < masked)
        set(x, kNegInf, n, v);
    }
  c.bind(layout);
  return c;
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "logprobs";
  d.level = "L1";
  d.summary = "log_softmax of each row at its sampled token, and the top-K tokens (ties: lower id) with theirs";
  d.args_size = sizeof(ComputeLogprobsArgs);
  d.tensor_args = {{"sampled_logprob", ArgRole::out, offsetof(ComputeLogprobsArgs, sampled_logprob)},
                   {"topk_ids", ArgRole::out, offsetof(ComputeLogprobsArgs, topk_ids)},
                   {"topk_logprobs", ArgRole::out, offsetof(ComputeLogprobsArgs, topk_logprobs)},
                   {"logits", ArgRole::in, offsetof(ComputeLogprobsArgs, logits), RowStride::any},
                   {"sampled_ids", ArgRole::in, offsetof(ComputeLogprobsArgs, sampled_ids)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<ComputeLogprobsArgs>();
    const double N = static_cast<double>(a.logits.shape[0]), V = static_cast<double>(a.logits.shape[1]);
    const double K = static_cast<double>(a.topk_ids.shape[1]);
    // Read the logits and ids once, write the outputs once; an exp and an add per logit.
    return OpCost{static_cast<double>(a.logits.nbytes()) + N * (8 + 4) + N * K * 8, 2 * N * V, DType::f32};
  };
  using J = Json;
  d.test_workloads = {
      J{{"batch", 4}, {"vocab", 1000}},
      J{{"batch", 2}, {"vocab", 1}, {"k", 1}},
      J{{"batch", 3}, {"vocab", 7}, {"k", 0}},
      J{{"batch", 3}, {"vocab", 7}, {"k", 7}, {"dtype", "bf16"}},
      J{{"batch", 0}, {"vocab", 100}},
      J{{"batch", 5}, {"vocab", 32003}, {"k", 20}, {"dtype", "bf16"}},
      // bf16 logits in a narrow range: thousands of exact ties, broken by token id.
      J{{"batch", 6}, {"vocab", 5000}, {"k", 20}, {"dtype", "bf16"}, {"logit_range", 0.05}},
      // Fewer finite logits than K: the top K runs into -inf entries (ordered by id).
      J{{"batch", 4}, {"vocab", 4099}, {"k", 20}, {"masked", 0.999}},
      J{{"batch", 3}, {"vocab", 3000}, {"k", 10}, {"logit_range", 40.0}},
      // Production vocabularies: Llama 3 with half the logits masked, Gemma's 256k.
      J{{"batch", 2}, {"vocab", 128256}, {"k", 20}, {"dtype", "bf16"}, {"masked", 0.5}},
      J{{"batch", 2}, {"vocab", 256000}, {"k", 20}, {"dtype", "bf16"}},
      J{{"batch", 2}, {"vocab", 262144}, {"k", 20}, {"dtype", "bf16"}, {"pattern", "hot_stride"}},
  };
  // Decode batches of Llama-3 / Qwen / Gemma vocabularies: every request wants 20
  // alternatives, or only the sampled token's logprob.
  for (int64_t vocab : {128256, 151936, 256000}) {
    for (int64_t batch : {1, 64, 256})
      d.bench_workloads.push_back(J{{"batch", batch}, {"vocab", vocab}, {"k", 20}, {"dtype", "bf16"}});
    d.bench_workloads.push_back(J{{"batch", 64}, {"vocab", vocab}, {"k", 0}, {"dtype", "bf16"}});
  }
  // Requests that ask for log-probabilities.
  d.architectures = {"llama",  "mistral", "qwen2",     "qwen3",     "gemma", "gemma2",
                     "gemma3", "mixtral", "qwen3_moe", "qwen2_moe", "olmoe"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("compute_logprobs", cpu, compute_logprobs_cpu);

}  // namespace
}  // namespace fk::ops
