// Paged attention CPU reference on hand-checked cases (one KV position, uniform scores,
// causal / window masks, GQA head mapping, soft-cap), its errors on bad metadata, the
// cost model and the workspace sizes. The reference against itself on random workloads
// runs in op_oracle_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "harness/check/op_check.h"
#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/attention.h"
#include "fk/runtime.h"

namespace fk {
namespace {

constexpr const char* kPrefill = ops::BatchPrefillPagedAttentionArgs::kName;
constexpr const char* kDecode = ops::BatchDecodePagedAttentionArgs::kName;

// A case of one of the ops, built from a workload, whose tensors a test edits by name
// before running the CPU reference on it.
struct AttnCase {
  const OpDef& def;
  OpCase c;

  AttnCase(const char* op, const Json& workload, uint64_t seed = 1)
      : def(OpRegistry::global().def(op)), c(def.make_case(workload, seed)) {}

  Tensor& operator[](const std::string& name) {
    for (size_t i = 0; i < def.tensor_args.size(); ++i)
      if (def.tensor_args[i].name == name) return c.tensors[i];
    throw std::runtime_error("no tensor arg " + name);
  }
  // Outputs in f64: the reference then writes them unrounded.
  void f64_outputs() {
    (*this)["out"] = Tensor::empty((*this)["out"].shape(), DType::f64);
    (*this)["lse"] = Tensor::empty((*this)["lse"].shape(), DType::f64);
  }
  template <class A>
  A& args() { return c.as<A>(); }
  void run() {
    c.bind(def.tensor_args);
    OpRegistry::global().call(def.name, DeviceType::cpu, c.args_ptr(), nullptr);
  }
  // Runs and returns the error message (empty if it succeeded).
  std::string run_error() {
    try {
      run();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  // Sets element i of an i32 metadata tensor and of its host mirror, if it has one.
  void set_meta(const std::string& name, int64_t i, int64_t value) {
    set((*this)[name].view(), static_cast<double>(value), i);
    for (const auto& a : def.tensor_args)
      if (a.name == name + "_host") set((*this)[name + "_host"].view(), static_cast<double>(value), i);
  }
  int64_t meta(const std::string& name, int64_t i) { return get_index((*this)[name].view(), i); }
  // Where KV position `pos` of sequence b lives: (page, slot).
  std::pair<int64_t, int64_t> kv_slot(int64_t b, int64_t pos) {
    const int64_t page_size = (*this)["k_cache"].size(1);
    const int64_t entry = meta("kv_indptr", b) + pos / page_size;
    return {meta("kv_indices", entry), pos % page_size};
  }
};

void zero(Tensor& t) { std::memset(t.data(), 0, t.nbytes()); }

// Mean of v over KV positions [lo, hi) of sequence b, KV head kh, dim d.
double mean_v(AttnCase& c, int64_t b, int64_t kh, int64_t d, int64_t lo, int64_t hi) {
  double sum = 0;
  for (int64_t pos = lo; pos < hi; ++pos) {
    const auto [page, slot] = c.kv_slot(b, pos);
    sum += get(c["v_cache"].view(), page, slot, kh, d);
  }
  return sum / static_cast<double>(hi - lo);
}

TEST(PagedAttention, OneKvPositionReturnsItsValue) {
  AttnCase c(kPrefill, {{"qo_lens", {1}}, {"kv_lens", {1}}, {"num_qo_heads", 4}, {"num_kv_heads", 4},
                        {"head_dim", 64}});
  c.run();
  const auto [page, slot] = c.kv_slot(0, 0);
  const double scale = c.args<ops::BatchPrefillPagedAttentionArgs>().sm_scale;
  for (int64_t h = 0; h < 4; ++h) {
    double dot = 0;
    for (int64_t d = 0; d < 64; ++d) {
      // Softmax over one position is exactly 1: out is v, bit for bit.
      EXPECT_EQ(get(c["out"].view(), 0, h, d), get(c["v_cache"].view(), page, slot, h, d)) << h << " " << d;
      dot += get(c["q"].view(), 0, h, d) * get(c["k_cache"].view(), page, slot, h, d);
    }
    EXPECT_NEAR(get(c["lse"].view(), 0, h), scale * dot / std::log(2.0), 1e-5);
  }
}

// With q = 0 every logit is 0: each query returns the mean of the values it sees, and
// lse = log2(number of positions it sees). This pins down the causal and window masks.
void expect_uniform_means(const Json& workload, bool causal, int64_t window) {
  AttnCase c(kPrefill, workload);
  c.f64_outputs();
  zero(c["q"]);
  c.run();
  const int64_t B = c["kv_indptr"].size(0) - 1, Hq = c["q"].size(1), D = c["q"].size(2);
  const int64_t group = Hq / c["k_cache"].size(2);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t q0 = c.meta("qo_indptr", b), qo_len = c.meta("qo_indptr", b + 1) - q0;
    const int64_t kv_len = workload["kv_lens"][b].get<int64_t>();
    for (int64_t i = 0; i < qo_len; ++i) {
      const int64_t p = kv_len - qo_len + i;
      const int64_t hi = causal ? p + 1 : kv_len, lo = window >= 0 ? std::max<int64_t>(0, p - window) : 0;
      for (int64_t h = 0; h < Hq; ++h) {
        for (int64_t d = 0; d < D; ++d)
          ASSERT_NEAR(get(c["out"].view(), q0 + i, h, d), mean_v(c, b, h / group, d, lo, hi), 1e-12)
              << workload.dump() << " seq " << b << " query " << i << " head " << h << " dim " << d;
        ASSERT_NEAR(get(c["lse"].view(), q0 + i, h), std::log2(static_cast<double>(hi - lo)), 1e-12);
      }
    }
  }
}

TEST(PagedAttention, CausalQueriesSeeTheirPrefix) {
  // A full prefill, a chunk of 4 after 6 cached tokens (pages of 4: scattered, the last
  // one partly filled), and a one-token chunk.
  expect_uniform_means({{"qo_lens", {3, 4, 1}}, {"kv_lens", {3, 10, 7}}, {"num_qo_heads", 4},
                        {"num_kv_heads", 2}, {"head_dim", 64}, {"page_size", 4}},
                       true, -1);
}

TEST(PagedAttention, SlidingWindowLimitsTheLeftEdge) {
  expect_uniform_means({{"qo_lens", {5, 2}}, {"kv_lens", {5, 12}}, {"num_qo_heads", 2}, {"num_kv_heads", 1},
                        {"head_dim", 64}, {"page_size", 4}, {"window_left", 2}},
                       true, 2);
}

TEST(PagedAttention, NonCausalQueriesSeeAllKv) {
  expect_uniform_means({{"qo_lens", {3, 2}}, {"kv_lens", {9, 2}}, {"num_qo_heads", 2}, {"num_kv_heads", 2},
                        {"head_dim", 64}, {"page_size", 1}, {"causal", false}},
                       false, -1);
  expect_uniform_means({{"qo_lens", {4}}, {"kv_lens", {9}}, {"num_qo_heads", 2}, {"num_kv_heads", 2},
                        {"head_dim", 64}, {"page_size", 2}, {"causal", false}, {"window_left", 1}},
                       false, 1);
}

TEST(PagedAttention, QueryHeadsShareTheirGroupsKvHead) {
  AttnCase c(kPrefill, {{"qo_lens", {2}}, {"kv_lens", {5}}, {"num_qo_heads", 6}, {"num_kv_heads", 2},
                        {"head_dim", 64}});
  c.f64_outputs();
  Tensor& v = c["v_cache"];
  for (int64_t page = 0; page < v.size(0); ++page)
    for (int64_t slot = 0; slot < v.size(1); ++slot)
      for (int64_t kh = 0; kh < 2; ++kh)
        for (int64_t d = 0; d < 64; ++d) set(v.view(), static_cast<double>(kh + 1), page, slot, kh, d);
  c.run();
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t h = 0; h < 6; ++h) EXPECT_NEAR(get(c["out"].view(), t, h, 7), h / 3 + 1, 1e-12) << h;
}

TEST(PagedAttention, SoftCapSquashesLogits) {
  // Two KV positions with logits s0 = scale * a and s1 = 0; values e_0 and e_1, so the
  // output is the softmax weights themselves.
  const double a = 2.0, scale = 1.0, cap = 1.5;
  AttnCase c(kPrefill, {{"qo_lens", {1}}, {"kv_lens", {2}}, {"num_qo_heads", 1}, {"num_kv_heads", 1},
                        {"head_dim", 64}, {"sm_scale", scale}, {"logits_soft_cap", cap}});
  c.f64_outputs();
  zero(c["q"]);
  zero(c["k_cache"]);
  zero(c["v_cache"]);
  set(c["q"].view(), a, 0, 0, 0);
  const auto [p0, s0] = c.kv_slot(0, 0);
  const auto [p1, s1] = c.kv_slot(0, 1);
  set(c["k_cache"].view(), 1.0, p0, s0, 0, 0);
  set(c["v_cache"].view(), 1.0, p0, s0, 0, 0);
  set(c["v_cache"].view(), 1.0, p1, s1, 0, 1);
  c.run();
  const double logit = cap * std::tanh(scale * a / cap);
  const double w0 = std::exp(logit) / (std::exp(logit) + 1.0);
  EXPECT_NEAR(get(c["out"].view(), 0, 0, 0), w0, 1e-12);
  EXPECT_NEAR(get(c["out"].view(), 0, 0, 1), 1.0 - w0, 1e-12);
  EXPECT_NEAR(get(c["lse"].view(), 0, 0), std::log2(std::exp(logit) + 1.0), 1e-12);
}

TEST(PagedAttention, DecodeAttendsToTheWholeSequenceOrItsWindow) {
  for (int64_t window : {-1, 3}) {
    AttnCase c(kDecode, {{"kv_lens", {1, 9, 16}}, {"num_qo_heads", 4}, {"num_kv_heads", 1}, {"head_dim", 64},
                         {"page_size", 4}, {"window_left", window}});
    c.f64_outputs();
    zero(c["q"]);
    c.run();
    const int64_t kv_lens[] = {1, 9, 16};
    for (int64_t b = 0; b < 3; ++b) {
      const int64_t lo = window >= 0 ? std::max<int64_t>(0, kv_lens[b] - 1 - window) : 0;
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t d = 0; d < 64; d += 9)
          EXPECT_NEAR(get(c["out"].view(), b, h, d), mean_v(c, b, 0, d, lo, kv_lens[b]), 1e-12) << b << " " << h;
    }
  }
}

TEST(PagedAttention, DecodeEqualsPrefillOfTheLastToken) {
  const Json shape = {{"num_qo_heads", 8}, {"num_kv_heads", 2}, {"head_dim", 64}, {"page_size", 4},
                      {"logits_soft_cap", 2.0}, {"window_left", 5}};
  Json dw = shape, pw = shape;
  dw["kv_lens"] = {11, 4};
  pw["kv_lens"] = {11, 4};
  pw["qo_lens"] = {1, 1};
  AttnCase d(kDecode, dw, 7), p(kPrefill, pw, 7);  // same seed: same q, caches and pages
  d.f64_outputs();
  p.f64_outputs();
  d.run();
  p.run();
  for (int64_t i = 0; i < d["out"].numel(); ++i)
    ASSERT_EQ(d["out"].data_as<double>()[i], p["out"].data_as<double>()[i]) << i;
}

// ---- bad inputs give errors that say what is wrong --------------------------------------
Json small_prefill() {
  return {{"qo_lens", {2, 3}}, {"kv_lens", {5, 3}}, {"num_qo_heads", 2}, {"num_kv_heads", 1},
          {"head_dim", 64}, {"page_size", 2}};
}

void expect_error(AttnCase& c, const std::string& what) {
  const std::string msg = c.run_error();
  EXPECT_NE(msg.find(what), std::string::npos) << "expected an error containing '" << what << "', got: " << msg;
}

TEST(PagedAttentionErrors, IndptrMustNotDecrease) {
  AttnCase c(kPrefill, small_prefill());
  c.set_meta("kv_indptr", 1, 4);  // 0, 3, 5 -> 0, 4, 1
  c.set_meta("kv_indptr", 2, 1);
  expect_error(c, "kv_indptr must not decrease");
  AttnCase q(kPrefill, small_prefill());
  q.set_meta("qo_indptr", 1, 6);  // 0, 2, 5 -> 0, 6, 5
  expect_error(q, "qo_indptr must not decrease");
}

TEST(PagedAttentionErrors, IndptrMustStartAtZeroAndCoverTheQueries) {
  AttnCase c(kPrefill, small_prefill());
  c.set_meta("qo_indptr", 0, 1);
  expect_error(c, "qo_indptr[0] must be 0");
  AttnCase t(kPrefill, small_prefill());
  t.set_meta("qo_indptr", 2, 4);
  expect_error(t, "must equal the number of query tokens 5");
}

TEST(PagedAttentionErrors, PageIndexOutOfRange) {
  for (int64_t bad : {-1, 1000}) {
    AttnCase c(kPrefill, small_prefill());
    c.set_meta("kv_indices", 1, bad);
    expect_error(c, "kv_indices[1] = " + std::to_string(bad) + " is not a page of the cache");
  }
}

TEST(PagedAttentionErrors, PagesBeyondKvIndices) {
  AttnCase c(kPrefill, small_prefill());
  c.set_meta("kv_indptr", 2, 9);
  expect_error(c, "exceeds the length of kv_indices");
}

TEST(PagedAttentionErrors, LastPageLength) {
  for (int64_t bad : {0, 3}) {
    AttnCase c(kPrefill, small_prefill());
    c.set_meta("kv_last_page_len", 0, bad);
    expect_error(c, "kv_last_page_len[0] = " + std::to_string(bad) + " must be in [1, 2]");
  }
}

TEST(PagedAttentionErrors, MoreQueriesThanKv) {
  AttnCase c(kPrefill, small_prefill());
  c.set_meta("kv_indptr", 2, 4);  // sequence 1: 2 pages -> 1 page, 3 -> 1 KV token for 3 queries
  expect_error(c, "sequence 1 has 3 query tokens but only 1 KV tokens");
}

TEST(PagedAttentionErrors, HostMirrorMustMatch) {
  AttnCase c(kPrefill, small_prefill());
  set(c["kv_indptr_host"].view(), 2.0, 1);
  expect_error(c, "kv_indptr_host must equal kv_indptr");
}

TEST(PagedAttentionErrors, HeadsAndDtypes) {
  AttnCase c(kPrefill, small_prefill());
  const Shape kv = c["k_cache"].shape();
  c["k_cache"] = Tensor::zeros({kv[0], kv[1], 3, kv[3]}, DType::bf16);  // 2 query heads, 3 KV heads
  c["v_cache"] = Tensor::zeros({kv[0], kv[1], 3, kv[3]}, DType::bf16);
  expect_error(c, "must be a multiple of KV heads");
  AttnCase o(kPrefill, small_prefill());
  o["out"] = Tensor::empty(o["out"].shape(), DType::f16);
  expect_error(o, "out must be bf16");
  AttnCase v(kPrefill, small_prefill());
  v["v_cache"] = Tensor::zeros(kv, DType::f16);
  expect_error(v, "v_cache must be bf16");
}

TEST(PagedAttentionErrors, Attributes) {
  AttnCase s(kPrefill, small_prefill());
  s.args<ops::BatchPrefillPagedAttentionArgs>().sm_scale = 0;
  expect_error(s, "sm_scale must be positive");
  AttnCase w(kPrefill, small_prefill());
  w.args<ops::BatchPrefillPagedAttentionArgs>().window_left = -2;
  expect_error(w, "window_left must be -1 (none) or >= 0");
  AttnCase cap(kPrefill, small_prefill());
  cap.args<ops::BatchPrefillPagedAttentionArgs>().logits_soft_cap = -1;
  expect_error(cap, "logits_soft_cap must be >= 0");
}

TEST(PagedAttentionErrors, GraphGridClass) {
  AttnCase d(kDecode, {{"kv_lens", {3, 2}}});
  d.args<ops::BatchDecodePagedAttentionArgs>().cuda_graph = ops::kDecodeGraphGrids + 1;
  expect_error(d, "cuda_graph must be 0 (eager) or a graph grid class in [1, 3], got 4");
  AttnCase p(kPrefill, small_prefill());
  p.args<ops::BatchPrefillPagedAttentionArgs>().cuda_graph = 2;
  expect_error(p, "cuda_graph must be 0 or 1, got 2");
}

TEST(PagedAttentionErrors, DecodeNeedsKv) {
  AttnCase c(kDecode, {{"kv_lens", {3, 2}}, {"num_qo_heads", 2}, {"num_kv_heads", 1}, {"head_dim", 64},
                       {"page_size", 2}});
  c.set_meta("kv_indptr", 2, 2);  // 0, 2, 3 -> 0, 2, 2: sequence 1 loses its page
  expect_error(c, "sequence 1 has no KV tokens; decode needs kv_len >= 1");
}

// ---- cost model, workspaces, plan registration ------------------------------------------
TEST(PagedAttention, CostCountsVisiblePositions) {
  const OpDef& def = OpRegistry::global().def(kPrefill);
  // Causal prefill of 4 tokens: 1 + 2 + 3 + 4 = 10 visible (query, key) pairs per head.
  OpCase c = def.make_case({{"qo_lens", {4}}, {"kv_lens", {4}}, {"num_qo_heads", 2}, {"num_kv_heads", 1},
                            {"head_dim", 64}},
                           1);
  OpCost cost = def.cost(c);
  EXPECT_EQ(cost.flops, 4.0 * 10 * 2 * 64);
  EXPECT_EQ(cost.bytes, 4.0 * 1 * 64 * 2 * 2 + 2 * 4 * 2 * 64 * 2 + 4 * 2 * 4);
  // Window of 3 at positions 8 and 9 of 10: 4 positions each; KV read: positions 5..9.
  c = def.make_case({{"qo_lens", {2}}, {"kv_lens", {10}}, {"num_qo_heads", 2}, {"num_kv_heads", 1},
                     {"head_dim", 64}, {"window_left", 3}},
                    1);
  cost = def.cost(c);
  EXPECT_EQ(cost.flops, 4.0 * 8 * 2 * 64);
  EXPECT_EQ(cost.bytes, 5.0 * 1 * 64 * 2 * 2 + 2 * 2 * 2 * 64 * 2 + 2 * 2 * 4);
}

// Page counts per sequence, then the class for a 132-SM device with 8 KV heads, 16-token pages.
int32_t grid_for(std::vector<int32_t> pages, int64_t kv_heads = 8, int64_t page_size = 16) {
  return ops::decode_graph_grid(pages.data(), static_cast<int64_t>(pages.size()), page_size, kv_heads, 132);
}

TEST(PagedAttention, DecodeGraphGridIsTheSmallestThatKeepsChunksShort) {
  // 264 CTAs (2 per SM) are 33 chunks per KV head: 4 x 1k tokens split into 8-page chunks.
  EXPECT_EQ(grid_for({13}), 3);
  EXPECT_EQ(grid_for({64, 64, 64, 64}), 3);
  EXPECT_EQ(grid_for(std::vector<int32_t>(33, 16)), 3);  // one 16-page chunk each: 256 tokens
  EXPECT_EQ(grid_for(std::vector<int32_t>(33, 17)), 2);  // 2 chunks each: 66 x 8 = 528 CTAs
  // 16k tokens: 1000 pages need 63 chunks of 16 pages (504 CTAs <= 528): class 2.
  EXPECT_EQ(grid_for({1000}), 2);
  // 32k tokens: even 4 CTAs per SM leave 31-page chunks: the whole device.
  EXPECT_EQ(grid_for({2000}), 1);
  // 64 x 4k: the batch alone fills 512 CTAs; the split needs the whole device.
  EXPECT_EQ(grid_for(std::vector<int32_t>(64, 256)), 1);
  // Short sequences never split: the smallest grid.
  EXPECT_EQ(grid_for(std::vector<int32_t>(256, 4)), 3);
  // Pages of 512 tokens: a chunk is at least a page, so one page per chunk is short enough.
  EXPECT_EQ(grid_for({3}, 8, 512), 3);
  EXPECT_EQ(grid_for({300}, 8, 512), 1);
  EXPECT_THROW(grid_for({}), Error);
}

TEST(PagedAttention, WorkspaceSizes) {
  const auto small = ops::paged_attention_workspace_bytes(1, 1, 32, 8, 128);
  const auto large = ops::paged_attention_workspace_bytes(256, 16384, 32, 8, 128);
  EXPECT_GT(small.float_bytes, 0);
  EXPECT_GE(large.float_bytes, small.float_bytes);
  EXPECT_GE(large.int_bytes, small.int_bytes);
  // Hopper prefill schedule: 8 i32 arrays of (query head, 128-row tile) work items.
  EXPECT_GE(large.int_bytes, 8 * 4 * 32 * (16384 / 128));
  AttnCase c(kDecode, {{"kv_lens", {3}}});
  EXPECT_EQ(c["float_workspace"].numel(), ops::paged_attention_workspace_bytes(1, 1, 32, 8, 128).float_bytes);
  EXPECT_EQ(c["host_int_workspace"].numel(), c["int_workspace"].numel());
}

TEST(PagedAttention, PlanIsCudaOnlyAndHostTensorsAreMarked) {
  for (const char* op : {kPrefill, kDecode}) {
    EXPECT_EQ(OpRegistry::global().active_plan(op, DeviceType::cpu), nullptr) << op;
    if (rt::built_with_cuda()) EXPECT_NE(OpRegistry::global().active_plan(op, DeviceType::cuda), nullptr) << op;
    for (const TensorArg& a : OpRegistry::global().def(op).tensor_args) {
      const bool host = a.name.ends_with("_host") || a.name == "host_int_workspace" || a.name == "plan_info";
      EXPECT_EQ(a.host_only, host) << op << " " << a.name;
    }
  }
}

// Host-only tensors (plan inputs and plan state) stay on the host, as copies of their own:
// a plan writes plan_info, so a baseline case and a candidate case must not share it.
TEST(PagedAttention, CaseToDeviceGivesHostOnlyTensorsTheirOwnHostCopy) {
  const OpDef& def = OpRegistry::global().def(kPrefill);
  const OpCase c = def.make_case({{"qo_lens", {2}}, {"kv_lens", {3}}}, 1);
  const OpCase moved = bench::case_to_device(def, c, Device::cpu());
  for (size_t i = 0; i < def.tensor_args.size(); ++i) {
    if (!c.tensors[i].defined()) continue;
    EXPECT_NE(moved.tensors[i].data(), c.tensors[i].data()) << def.tensor_args[i].name;
    if (def.tensor_args[i].host_only) {
      EXPECT_TRUE(moved.tensors[i].device().is_cpu()) << def.tensor_args[i].name;
      EXPECT_EQ(std::memcmp(moved.tensors[i].data(), c.tensors[i].data(), c.tensors[i].nbytes()), 0)
          << def.tensor_args[i].name;
    }
  }
}

}  // namespace
}  // namespace fk
