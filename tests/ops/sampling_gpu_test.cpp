// sample on the GPU: greedy exactness with ties at production vocabulary sizes, the
// settings that reduce to greedy, agreement with the reference over many rows, determinism,
// the empirical distribution, and the documented handling of invalid parameters.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "harness/check/op_check.h"
#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/sampling.h"
#include "fk/runtime.h"
#include "ops/sampling/sample_cluster.h"
#include "ops/sampling/sample_reference.h"
#include "support/test_seed.h"

namespace fk::ops {
namespace {

const OpDef& sample_def() { return OpRegistry::global().def("sample"); }

// Runs the CUDA baseline on a host case; returns the tokens.
std::vector<int64_t> run_gpu(const OpCase& host) {
  OpCase dev = bench::case_to_device(sample_def(), host, Device::cuda(0));
  call_op(dev.as<SampleArgs>(), DeviceType::cuda, nullptr);
  rt::device_synchronize();
  const Tensor out = dev.tensors[0].to(Device::cpu());
  return {out.data_as<int64_t>(), out.data_as<int64_t>() + out.numel()};
}

// The op's own output check (the reference's judgement) on GPU tokens.
std::string judge(const OpCase& host, const std::vector<int64_t>& tokens) {
  OpCase actual = host;
  actual.tensors[0] = Tensor::empty({host.tensors[0].numel()}, DType::i64);
  std::memcpy(actual.tensors[0].data(), tokens.data(), tokens.size() * 8);
  actual.bind(sample_def().tensor_args);
  return sample_def().check_outputs(host, host, actual);
}

size_t count_equal(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t same = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) same += a[i] == b[i];
  return same;
}

// The CUDA baseline `times` times on one device copy of a host case: the tokens of each run.
std::vector<std::vector<int64_t>> run_gpu_times(const OpCase& host, int times) {
  OpCase dev = bench::case_to_device(sample_def(), host, Device::cuda(0));
  std::vector<std::vector<int64_t>> runs;
  for (int t = 0; t < times; ++t) {
    call_op(dev.as<SampleArgs>(), DeviceType::cuda, nullptr);
    rt::device_synchronize();
    const Tensor out = dev.tensors[0].to(Device::cpu());
    runs.emplace_back(out.data_as<int64_t>(), out.data_as<int64_t>() + out.numel());
  }
  return runs;
}

// The sampler's cap on blocks per row (sample_cluster.h) for one scope: sample's variant
// max_cluster_<n>, or the default (kSampleMaxCluster).
class MaxCluster {
 public:
  explicit MaxCluster(int n) {
    OpRegistry::global().select_variants(
        "sample", n == kSampleMaxCluster ? std::vector<std::string>{} : std::vector<std::string>{concat("max_cluster_", n)});
  }
  ~MaxCluster() { OpRegistry::global().select_variants("sample", {}); }
  MaxCluster(const MaxCluster&) = delete;
  MaxCluster& operator=(const MaxCluster&) = delete;
};

std::vector<int64_t> run_cpu(const OpCase& host) {
  OpCase c = host;
  c.tensors[0] = Tensor::empty({host.tensors[0].numel()}, DType::i64);
  c.bind(sample_def().tensor_args);
  call_op(c.as<SampleArgs>(), DeviceType::cpu, nullptr);
  return {c.tensors[0].data_as<int64_t>(), c.tensors[0].data_as<int64_t>() + c.tensors[0].numel()};
}

TEST(SampleGpu, GreedyIsExactWithTiesAtProductionVocab) {
  FK_REQUIRE_GPU();
  for (const char* dt : {"bf16", "f32"}) {
    // bf16 logits in [-0.05, 0.05]: the maximum is tied across many tokens.
    const Json w = {{"batch", 16}, {"vocab", 128256}, {"dtype", dt}, {"logit_range", 0.05}, {"temperature", 0}};
    const OpCase host = sample_def().make_case(w, test::seed_for(std::string("SampleGpuGreedy") + dt));
    EXPECT_EQ(run_gpu(host), run_cpu(host)) << dt;
  }
}

TEST(SampleGpu, TopKOneAndTinyTopPAreGreedy) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("SampleGpuReduceToGreedy");
  const OpCase greedy = sample_def().make_case({{"batch", 64}, {"vocab", 32000}, {"temperature", 0}}, seed);
  const std::vector<int64_t> expect = run_cpu(greedy);
  const OpCase k1 = sample_def().make_case({{"batch", 64}, {"vocab", 32000}, {"temperature", 0.8}, {"top_k", 1}}, seed);
  EXPECT_EQ(run_gpu(k1), expect);
  const OpCase p0 = sample_def().make_case({{"batch", 64}, {"vocab", 32000}, {"temperature", 1.3}, {"top_p", 1e-7}}, seed);
  EXPECT_EQ(run_gpu(p0), expect);
}

// Mixed settings over many rows and vocabulary sizes: every token passes the check, nearly
// all equal the reference's, and a second run gives the same tokens.
TEST(SampleGpu, AgreesWithReferenceAndIsDeterministic) {
  FK_REQUIRE_GPU();
  const Json workloads[] = {
      {{"batch", 200}, {"vocab", 32000}},
      {{"batch", 100}, {"vocab", 128256}, {"dtype", "bf16"}},
      {{"batch", 100}, {"vocab", 4096}, {"logit_range", 30.0}},
      {{"batch", 100}, {"vocab", 3000}, {"dtype", "bf16"}, {"logit_range", 0.02}},
  };
  for (const Json& w : workloads) {
    const OpCase host = sample_def().make_case(w, test::seed_for("SampleGpuAgree" + w.dump()));
    const std::vector<int64_t> gpu = run_gpu(host), cpu = run_cpu(host);
    EXPECT_EQ(judge(host, gpu), "") << w.dump();
    EXPECT_GE(count_equal(gpu, cpu) + 2, gpu.size()) << w.dump() << ": boundary disagreements should be rare";
    EXPECT_EQ(run_gpu(host), gpu) << w.dump();
  }
}

// The kernel gives a row 8, 4, 2 or 1 blocks (a cluster) by batch size. The same rows
// sampled in batches of different sizes must give the same tokens, every one accepted by
// the reference.
TEST(SampleGpu, ClusterSizesGiveTheSameTokens) {
  FK_REQUIRE_GPU();
  for (const char* dt : {"f32", "bf16"}) {
    for (int64_t V : {128256, 100003}) {  // the second: a slice end that is no multiple of the vector width
      const uint64_t seed = test::seed_for(std::string("SampleGpuClusters") + dt + std::to_string(V));
      auto make = [&](int64_t B) { return sample_def().make_case({{"batch", B}, {"vocab", V}, {"dtype", dt}}, seed); };
      const std::vector<int64_t> full = run_gpu(make(256));
      const OpCase judged = make(40);
      EXPECT_EQ(judge(judged, run_gpu(judged)), "") << dt << " V " << V;
      for (int64_t B : {1, 3, 16, 64, 128}) {
        const std::vector<int64_t> part = run_gpu(make(B));
        for (int64_t b = 0; b < B; ++b)
          EXPECT_EQ(part[static_cast<size_t>(b)], full[static_cast<size_t>(b)]) << dt << " V " << V << " batch " << B << " row " << b;
      }
    }
  }
}

// Every logit equal: one bucket of the whole vocabulary, larger than the candidate arrays,
// so top-k, top-p and the draw select inside it by radix passes (ties broken by token id).
// Weights are exactly 1 on both sides, so the tokens are the reference's.
TEST(SampleGpu, RowsOfEqualLogitsSelectInsideOneBucket) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("SampleGpuEqualLogits");
  for (const char* dt : {"f32", "bf16"}) {
    const Json base = {{"batch", 30}, {"vocab", 128256}, {"dtype", dt}, {"logit_range", 0.0}};
    for (const Json& extra : {Json::object(), Json{{"top_k", 5000}}, Json{{"top_k", 20}, {"top_p", 0.3}},
                              Json{{"temperature", 1.0}, {"top_p", 0.3}, {"min_p", 0.5}}}) {
      Json w = base;
      for (const auto& [key, value] : extra.items()) w[key] = value;
      const OpCase host = sample_def().make_case(w, seed);
      const std::vector<int64_t> gpu = run_gpu(host);
      EXPECT_EQ(judge(host, gpu), "") << w.dump();
      EXPECT_EQ(gpu, run_cpu(host)) << w.dump();
      EXPECT_EQ(run_gpu(host), gpu) << w.dump();
    }
  }
}

// The cluster path (the default cap; MaxCluster(1) above turns it off) on the rows
// that hung it: on equal logits a top-k row's k-th bucket is too large to gather, so the
// row builds a second histogram, and a warp still reading the first one's counts while
// another warp zeroed them took other branches and missed cluster barriers (now and then).
// Batches of 12, 30 and 60 get clusters of 8, 4 and 2 blocks on an H100; every run of
// many must give the single block's tokens, which the test above holds to the reference.
TEST(SampleGpu, ClustersOnRowsOfEqualLogitsGiveTheSingleBlockTokens) {
  FK_REQUIRE_GPU();
  constexpr int kSeeds = 4, kRuns = 25;
  for (const char* dt : {"f32", "bf16"}) {
    for (int64_t B : {12, 30, 60}) {
      const Json base = {{"batch", B}, {"vocab", 128256}, {"dtype", dt}, {"logit_range", 0.0}};
      for (const Json& extra : {Json::object(), Json{{"top_k", 5000}}, Json{{"top_k", 20}, {"top_p", 0.3}},
                                Json{{"temperature", 1.0}, {"top_p", 0.3}, {"min_p", 0.5}}}) {
        Json w = base;
        for (const auto& [key, value] : extra.items()) w[key] = value;
        for (int s = 0; s < kSeeds; ++s) {
          const OpCase host = sample_def().make_case(w, test::seed_for("SampleGpuClusterEqualLogits", s));
          std::vector<int64_t> one_block;
          {
            const MaxCluster cap(1);
            one_block = run_gpu(host);
          }
          const MaxCluster cap(kSampleMaxCluster);
          const std::vector<std::vector<int64_t>> runs = run_gpu_times(host, kRuns);
          for (size_t r = 0; r < runs.size(); ++r) ASSERT_EQ(runs[r], one_block) << w.dump() << " seed " << s << " run " << r;
        }
      }
    }
  }
}

// Masked vocabularies and low temperatures: most tokens weigh nothing (the kernel's dead
// bucket), and a top_k past the live tokens keeps all of them.
TEST(SampleGpu, DeadTokensAndTopKPastThem) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("SampleGpuDeadTokens");
  const Json workloads[] = {
      {{"batch", 30}, {"vocab", 128256}, {"temperature", 0.05}, {"top_k", 3000}},
      {{"batch", 30}, {"vocab", 128256}, {"temperature", 0.05}, {"top_k", 20000}},
      {{"batch", 30}, {"vocab", 128256}, {"temperature", 0.05}, {"top_p", 0.95}, {"min_p", 1e-12}},
      {{"batch", 30}, {"vocab", 128256}, {"top_k", 100000}},  // with every odd token masked below
      {{"batch", 30}, {"vocab", 151936}, {"dtype", "bf16"}},
  };
  for (size_t n = 0; n < std::size(workloads); ++n) {
    OpCase host = sample_def().make_case(workloads[n], seed + n);
    if (n >= 3) {  // mask every odd token with -inf
      const int64_t B = host.tensors[1].shape()[0], V = host.tensors[1].shape()[1];
      for (int64_t b = 0; b < B; ++b)
        for (int64_t v = 1; v < V; v += 2) set(host.tensors[1].view(), -INFINITY, b, v);
    }
    const std::vector<int64_t> gpu = run_gpu(host);
    EXPECT_EQ(judge(host, gpu), "") << workloads[n].dump();
    EXPECT_GE(count_equal(gpu, run_cpu(host)) + 2, gpu.size()) << workloads[n].dump();
  }
}

TEST(SampleGpu, DistributionMatchesProbabilities) {
  FK_REQUIRE_GPU();
  const std::vector<double> p = {0.05, 0.3, 0.15, 0.25, 0.1, 0.15};
  const int64_t B = 20000, V = 6;
  OpCase host = sample_def().make_case({{"batch", B}, {"vocab", V}, {"temperature", 1.0}, {"top_k", 0},
                                        {"top_p", 1.0}, {"min_p", 0.0}},
                                       test::seed_for("SampleGpuDistribution"));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t v = 0; v < V; ++v) set(host.tensors[1].view(), std::log(p[static_cast<size_t>(v)]), b, v);
  const std::vector<int64_t> tokens = run_gpu(host);
  std::vector<int64_t> counts(V);
  for (int64_t t : tokens) ++counts[static_cast<size_t>(t)];
  for (int64_t v = 0; v < V; ++v) {
    const double q = p[static_cast<size_t>(v)];
    EXPECT_NEAR(static_cast<double>(counts[static_cast<size_t>(v)]) / B, q, 5 * std::sqrt(q * (1 - q) / B)) << v;
  }
}

// Parameters live on the device and are not validated; the header documents their reading.
TEST(SampleGpu, InvalidParametersFollowTheDocumentedReading) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("SampleGpuInvalid");
  const Json base = {{"batch", 32}, {"vocab", 1000}};
  const std::vector<int64_t> greedy = run_cpu(sample_def().make_case(
      {{"batch", 32}, {"vocab", 1000}, {"temperature", 0}}, seed));
  auto with = [&](const char* key, double v) {  // temperature 1 unless the key says otherwise
    Json w = base;
    w["temperature"] = 1.0;
    w[key] = v;
    return sample_def().make_case(w, seed);
  };
  EXPECT_EQ(run_gpu(with("temperature", -1.0)), greedy);
  EXPECT_EQ(run_gpu(with("top_p", 0.0)), greedy);
  EXPECT_EQ(run_gpu(with("min_p", 2.0)), greedy);  // read as 1: only the top token (no ties in f32 logits)
  // top_k < 0 reads as off: same draws as top_k = 0.
  Json off = base;
  off["top_k"] = 0;
  Json neg = base;
  neg["top_k"] = -5;
  EXPECT_EQ(run_gpu(sample_def().make_case(neg, seed)), run_gpu(sample_def().make_case(off, seed)));
}

TEST(SampleGpu, OversizedVocabularyIsAClearError) {
  FK_REQUIRE_GPU();
  const OpCase host = sample_def().make_case({{"batch", 1}, {"vocab", (1 << 23) + 1}}, 1);
  const OpCase dev = bench::case_to_device(sample_def(), host, Device::cuda(0));
  EXPECT_EQ(OpRegistry::global().baseline("sample", DeviceType::cuda)(dev.args_ptr(), nullptr), FK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(last_error_message()).find("vocabularies up to"), std::string::npos) << last_error_message();
}

}  // namespace
}  // namespace fk::ops
