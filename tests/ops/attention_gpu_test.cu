// Paged attention on the GPU (CUDA plan + run) beyond op_oracle_gpu_test's checks:
// plan once and run many times gives identical results; a run captured in a CUDA graph
// and replayed matches, also after a re-plan with new sequence lengths (cuda_graph = 1);
// larger shapes against the oracle; the optional lse; runs without a matching plan fail
// clearly; host-only tensors stay on the host; fk's opt-in split-KV decode; the prefill's
// contiguous-KV path.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/check/op_check.h"
#include "fk/op_registry.h"
#include "fk/ops/attention.h"
#include "fk/runtime.h"
#include "support/test_seed.h"

namespace fk {
namespace {

constexpr const char* kPrefill = ops::BatchPrefillPagedAttentionArgs::kName;
constexpr const char* kDecode = ops::BatchDecodePagedAttentionArgs::kName;

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

bool on_hopper() {
  int major = 0;
  return cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess && major == 9;
}

#define REQUIRE_HOPPER()                                                          \
  do {                                                                            \
    FK_REQUIRE_GPU();                                                             \
    if (!on_hopper()) GTEST_SKIP() << "the kernels are built for sm_90a (Hopper)"; \
  } while (0)

size_t arg_index(const OpDef& def, const std::string& name) {
  for (size_t i = 0; i < def.tensor_args.size(); ++i)
    if (def.tensor_args[i].name == name) return i;
  throw std::runtime_error("no tensor arg " + name);
}

// A case on the device with its oracle, ready for plan and run.
struct GpuCase {
  const OpDef& def;
  OpCase host, oracle, dev;

  GpuCase(const char* op, const Json& workload, uint64_t seed)
      : def(OpRegistry::global().def(op)), host(def.make_case(workload, seed)) {
    oracle = bench::make_oracle_case(def, host);
    bench::run_oracle(def, oracle);
    dev = bench::case_to_device(def, host, Device::cuda(0));
    bench::poison_outputs(def, dev);
  }
  Tensor& t(const std::string& name) { return dev.tensors[arg_index(def, name)]; }
  void plan(cudaStream_t s = nullptr) { OpRegistry::global().plan(def.name, DeviceType::cuda, dev.args_ptr(), s); }
  void run(cudaStream_t s = nullptr) { OpRegistry::global().call(def.name, DeviceType::cuda, dev.args_ptr(), s); }
  std::string run_error(cudaStream_t s = nullptr) {
    try {
      run(s);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  // Every output within tolerance of the oracle; "" when so.
  std::string compare() {
    rt::device_synchronize(0);
    std::string why;
    for (const char* name : {"out", "lse"}) {
      const size_t i = arg_index(def, name);
      const Tensor& x = dev.tensors[i];
      const Tolerance tol = def.tolerance(host, def.tensor_args[i], x.dtype());
      const bench::OutputError e = bench::compare_output(name, x, oracle.tensors[i], tol);
      if (e.num_bad)
        why += concat(name, ": ", e.num_bad, " of ", e.numel, " bad, worst at ", e.worst_index, " got ",
                      e.worst_value, " expected ", e.worst_ref, "; ");
    }
    return why;
  }
};

std::vector<uint8_t> bytes_of(const Tensor& t) {
  Tensor h = t.to(Device::cpu());
  const auto* p = static_cast<const uint8_t*>(h.data());
  return std::vector<uint8_t>(p, p + h.nbytes());
}

// Workloads of both paths (Hopper prefill, CUDA-core decode with split KV, decode
// through the prefill kernels) at the three head dims.
const Json kPrefillWorkload = {{"qo_lens", {130, 1, 40}}, {"kv_lens", {300, 77, 40}}, {"window_left", 100},
                               {"logits_soft_cap", 3.0}, {"sm_scale", 0.3}};
const Json kDecodeWorkload = {{"kv_lens", {1500, 3, 260}}, {"num_qo_heads", 16}, {"num_kv_heads", 4},
                              {"head_dim", 256}, {"page_size", 1}};

TEST(PagedAttentionGpu, HostOnlyTensorsStayOnTheHost) {
  REQUIRE_HOPPER();
  GpuCase c(kPrefill, {{"qo_lens", {2}}, {"kv_lens", {3}}}, 1);
  for (size_t i = 0; i < c.def.tensor_args.size(); ++i)
    EXPECT_EQ(c.dev.tensors[i].device().is_cpu(), c.def.tensor_args[i].host_only) << c.def.tensor_args[i].name;
}

void poison_out(GpuCase& c) {
  for (const char* name : {"out", "lse"}) rt::memset_async(c.t(name).data(), 0xFF, c.t(name).nbytes(), c.t(name).device(), nullptr);
}

TEST(PagedAttentionGpu, PlanOnceRunManyTimes) {
  REQUIRE_HOPPER();
  for (const auto& [op, w] : {std::pair{kPrefill, kPrefillWorkload}, std::pair{kDecode, kDecodeWorkload}}) {
    GpuCase c(op, w, test::seed_for(std::string(op) + "_plan_once"));
    c.plan();
    c.run();
    rt::device_synchronize(0);
    const std::vector<uint8_t> first = bytes_of(c.t("out")), first_lse = bytes_of(c.t("lse"));
    EXPECT_EQ(c.compare(), "") << op;
    // One plan, several runs (once per layer): identical results.
    for (int i = 0; i < 3; ++i) {
      poison_out(c);
      c.run();
      rt::device_synchronize(0);
      EXPECT_EQ(bytes_of(c.t("out")), first) << op << " run " << i;
      EXPECT_EQ(bytes_of(c.t("lse")), first_lse) << op << " run " << i;
    }
    // Plan again from poisoned workspaces: the same schedule, the same results.
    bench::poison_outputs(c.def, c.dev);
    c.plan();
    c.run();
    rt::device_synchronize(0);
    EXPECT_EQ(bytes_of(c.t("out")), first) << op << " after a re-plan";
  }
}

// Copies every device tensor of `src` into the buffers of `dst` (same shapes) and the
// host mirrors likewise: dst now describes src's batch at dst's addresses.
void load_batch(GpuCase& dst, GpuCase& src) {
  for (size_t i = 0; i < dst.def.tensor_args.size(); ++i) {
    const ArgRole role = dst.def.tensor_args[i].role;
    if (role != ArgRole::in) continue;
    ASSERT_EQ(dst.dev.tensors[i].shape(), src.dev.tensors[i].shape()) << dst.def.tensor_args[i].name;
    dst.dev.tensors[i].copy_from(src.dev.tensors[i]);
  }
}

void graph_replay_matches(const char* op, const Json& first, const Json& second) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  GpuCase c(op, first, test::seed_for(std::string(op) + "_graph"));
  c.plan(s);
  c.run(s);
  CUDA_OK(cudaStreamSynchronize(s));
  const std::vector<uint8_t> eager = bytes_of(c.t("out"));
  ASSERT_EQ(c.compare(), "") << op;

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  std::string err = c.run_error(s);  // on the captured stream: the graph holds these launches
  CUDA_OK(cudaStreamEndCapture(s, &graph));
  ASSERT_EQ(err, "") << "run failed under stream capture";
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OK(cudaMemsetAsync(c.t("out").data(), 0, c.t("out").nbytes(), s));
  CUDA_OK(cudaGraphLaunch(exec, s));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(bytes_of(c.t("out")), eager) << op << ": graph replay differs from the eager run";

  // A new batch of the same size (other sequence lengths) in the same buffers: re-plan on
  // the same workspaces and replay the graph captured for the first batch.
  GpuCase next(op, second, test::seed_for(std::string(op) + "_graph2"));
  load_batch(c, next);
  c.plan(s);
  CUDA_OK(cudaGraphLaunch(exec, s));
  CUDA_OK(cudaStreamSynchronize(s));
  for (const char* name : {"out", "lse"}) c.oracle.tensors[arg_index(c.def, name)] =
      next.oracle.tensors[arg_index(c.def, name)];
  EXPECT_EQ(c.compare(), "") << op << ": graph replay after a re-plan";

  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(PagedAttentionGpu, CapturedGraphReplayMatches) {
  REQUIRE_HOPPER();
  // Same batch size, token count and page count; other lengths.
  graph_replay_matches(kDecode, {{"kv_lens", {300, 47, 3}}, {"cuda_graph", true}},
                       {{"kv_lens", {3, 47, 300}}, {"cuda_graph", true}});
  graph_replay_matches(kDecode, {{"kv_lens", {900, 20}}, {"num_qo_heads", 14}, {"num_kv_heads", 2}, {"cuda_graph", true}},
                       {{"kv_lens", {20, 900}}, {"num_qo_heads", 14}, {"num_kv_heads", 2}, {"cuda_graph", true}});
  // Grid classes that cap the split grid: the second batch splits into other chunk counts.
  for (int grid : {2, 3})
    graph_replay_matches(kDecode, {{"kv_lens", {3000, 47, 3}}, {"cuda_graph", grid}},
                         {{"kv_lens", {3, 1500, 1547}}, {"cuda_graph", grid}});
  graph_replay_matches(kPrefill, {{"qo_lens", {3, 10}}, {"kv_lens", {20, 10}}, {"cuda_graph", true}},
                       {{"qo_lens", {10, 3}}, {"kv_lens", {10, 20}}, {"cuda_graph", true}});
  // 64-token pages take the TMA mainloop, whose tensor maps are parameters of the captured
  // launch: the replay after a re-plan must still read the same cache.
  graph_replay_matches(kPrefill,
                       {{"qo_lens", {3, 100}}, {"kv_lens", {70, 100}}, {"page_size", 64}, {"cuda_graph", true}},
                       {{"qo_lens", {100, 3}}, {"kv_lens", {100, 70}}, {"page_size", 64}, {"cuda_graph", true}});
}

TEST(PagedAttentionGpu, LargerShapesMatchTheOracle) {
  REQUIRE_HOPPER();
  const Json workloads[] = {
      {{"qo_lens", {300, 129, 1}}, {"kv_lens", {700, 129, 1000}}},
      {{"qo_lens", {257}}, {"kv_lens", {600}}, {"head_dim", 64}, {"num_qo_heads", 8}, {"num_kv_heads", 8},
       {"page_size", 1}, {"dtype", "f16"}},
      {{"qo_lens", {200, 50}}, {"kv_lens", {200, 400}}, {"head_dim", 256}, {"num_qo_heads", 8}, {"num_kv_heads", 1},
       {"causal", false}},
  };
  for (const Json& w : workloads) {
    GpuCase c(kPrefill, w, test::seed_for("large_prefill" + w.dump()));
    c.plan();
    c.run();
    EXPECT_EQ(c.compare(), "") << w.dump();
  }
  const Json decodes[] = {
      {{"kv_lens", {4096, 1, 2049, 333, 17, 1000, 4000, 64}}},
      {{"kv_lens", {3000, 5}}, {"head_dim", 64}, {"num_qo_heads", 32}, {"num_kv_heads", 4}, {"window_left", 500},
       {"dtype", "f16"}},
      {{"kv_lens", {2500, 700, 1}}, {"num_qo_heads", 12}, {"num_kv_heads", 1}, {"logits_soft_cap", 4.0},
       {"sm_scale", 0.5}},
      // Group sizes 1 (MHA), 5 (not a FlashInfer decode group: the prefill kernels) and 16
      // at head dim 256 with soft-cap; a 32k context; a batch of 64; group 20.
      {{"kv_lens", {700, 2, 129}}, {"num_qo_heads", 8}, {"num_kv_heads", 8}, {"head_dim", 64}},
      {{"kv_lens", {1000, 33}}, {"num_qo_heads", 10}, {"num_kv_heads", 2}, {"window_left", 100}},
      {{"kv_lens", {600, 31, 32, 33}}, {"num_qo_heads", 16}, {"num_kv_heads", 1}, {"head_dim", 256},
       {"logits_soft_cap", 8.0}, {"dtype", "f16"}},
      {{"kv_lens", {32768}}, {"num_qo_heads", 32}, {"num_kv_heads", 8}},
      {{"kv_lens", std::vector<int>(64, 300)}, {"num_qo_heads", 32}, {"num_kv_heads", 4}, {"page_size", 16}},
      {{"kv_lens", {2500, 700, 1}}, {"num_qo_heads", 20}, {"num_kv_heads", 1}},
  };
  for (const Json& w : decodes) {
    GpuCase c(kDecode, w, test::seed_for("large_decode" + w.dump()));
    c.plan();
    c.run();
    EXPECT_EQ(c.compare(), "") << w.dump();
  }
}

// The prefill's contiguous-KV path (the pages copied out of the cache, then FlashInfer's
// ragged kernel; contiguous_kv_policy.h): forced with the prefill op's variant
// contiguous_kv (selected in-process) on edge
// layouts (pages of 1, 8 and 32 tokens, a sequence without tokens, NaN past the ends,
// chunks over a prefix, no mask, window with soft-cap, f16), and taken by itself on a
// prompt long enough. plan_info's path slot (1) says which path the plan took: 4 is this one.
class ContiguousKvMode {
 public:
  explicit ContiguousKvMode(const char* variant) { OpRegistry::global().select_variants(kPrefill, {variant}); }
  ~ContiguousKvMode() { OpRegistry::global().select_variants(kPrefill, {}); }
};

constexpr int64_t kContiguousKvPath = 4;

int64_t planned_path(GpuCase& c) { return static_cast<const int64_t*>(c.t("plan_info").data())[1]; }

TEST(PagedAttentionGpu, ContiguousKvPrefillMatchesTheOracle) {
  REQUIRE_HOPPER();
  const ContiguousKvMode always("contiguous_kv");
  const Json workloads[] = {
      {{"qo_lens", {300, 129, 1}}, {"kv_lens", {700, 129, 1000}}},
      {{"qo_lens", {37, 0, 100}}, {"kv_lens", {45, 0, 229}}, {"page_size", 8}, {"nan_past_end", true}},
      {{"qo_lens", {70, 3}}, {"kv_lens", {201, 3}}, {"page_size", 1}, {"num_qo_heads", 8}, {"num_kv_heads", 2}},
      {{"qo_lens", {20, 9}}, {"kv_lens", {77, 9}}, {"causal", false}, {"page_size", 32}, {"num_qo_heads", 4},
       {"num_kv_heads", 4}, {"nan_past_end", true}},
      {{"qo_lens", {250, 40}}, {"kv_lens", {400, 161}}, {"window_left", 20}, {"logits_soft_cap", 3.0},
       {"dtype", "f16"}, {"nan_past_end", true}},
  };
  for (const Json& w : workloads) {
    GpuCase c(kPrefill, w, test::seed_for("contiguous_kv" + w.dump()));
    c.plan();
    EXPECT_EQ(planned_path(c), kContiguousKvPath) << w.dump();
    c.run();
    EXPECT_EQ(c.compare(), "") << w.dump();
    const std::vector<uint8_t> first = bytes_of(c.t("out"));
    poison_out(c);
    c.run();
    rt::device_synchronize(0);
    EXPECT_EQ(bytes_of(c.t("out")), first) << "a second run differs: " << w.dump();
  }
  // Never: the paged kernel, same results within tolerance.
  {
    const ContiguousKvMode never("no_contiguous_kv");
    GpuCase c(kPrefill, workloads[0], 3);
    c.plan();
    EXPECT_NE(planned_path(c), kContiguousKvPath);
    c.run();
    EXPECT_EQ(c.compare(), "");
  }
}

TEST(PagedAttentionGpu, ContiguousKvPrefillIsChosenForLongPrompts) {
  REQUIRE_HOPPER();
  OpRegistry::global().select_variants(kPrefill, {});
  // 16 prompts of 600 tokens: ~296 query-key pairs per copied row and 640 work items (5
  // query tiles x 16 x 8 heads), past both thresholds on up to 320 SMs; 8 heads keep the
  // double-precision oracle quick.
  const std::vector<int> prompts(16, 600);
  GpuCase c(kPrefill, {{"qo_lens", prompts}, {"kv_lens", prompts}, {"num_qo_heads", 8}, {"num_kv_heads", 2}}, 11);
  c.plan();
  EXPECT_EQ(planned_path(c), kContiguousKvPath);
  c.run();
  EXPECT_EQ(c.compare(), "");
  // Short prompts stay on the paged kernel.
  GpuCase short_prompts(kPrefill, {{"qo_lens", {300, 200}}, {"kv_lens", {300, 200}}}, 12);
  short_prompts.plan();
  EXPECT_NE(planned_path(short_prompts), kContiguousKvPath);
}

TEST(PagedAttentionGpu, LseIsOptional) {
  REQUIRE_HOPPER();
  for (const auto& [op, w] : {std::pair{kPrefill, kPrefillWorkload}, std::pair{kDecode, kDecodeWorkload}}) {
    GpuCase c(op, w, 5);
    c.plan();
    c.run();
    rt::device_synchronize(0);
    const std::vector<uint8_t> with_lse = bytes_of(c.t("out"));
    TensorView none{};  // data == nullptr: no lse
    std::memcpy(c.dev.args.data() + c.def.tensor_args[arg_index(c.def, "lse")].offset, &none, sizeof(none));
    c.plan();
    c.run();
    rt::device_synchronize(0);
    EXPECT_EQ(bytes_of(c.t("out")), with_lse) << op;
  }
}

TEST(PagedAttentionGpu, RunNeedsAMatchingPlan) {
  REQUIRE_HOPPER();
  GpuCase d(kDecode, kDecodeWorkload, 3);
  std::memset(d.t("plan_info").data(), 0, d.t("plan_info").nbytes());
  EXPECT_NE(d.run_error().find("plan_info holds no plan"), std::string::npos) << d.run_error();
  d.plan();
  d.dev.as<ops::BatchDecodePagedAttentionArgs>().logits_soft_cap = 2.0f;  // another kernel variant
  EXPECT_NE(d.run_error().find("plan again"), std::string::npos) << d.run_error();

  GpuCase p(kPrefill, kPrefillWorkload, 3);
  p.plan();
  p.dev.as<ops::BatchPrefillPagedAttentionArgs>().causal = 0;
  EXPECT_NE(p.run_error().find("plan again"), std::string::npos) << p.run_error();
}

}  // namespace
}  // namespace fk
