// maxsim's CUDA baseline on what the generic GPU oracle test (every test workload, and their
// row-strided views) does not cover, against the f64 oracle: random shapes of every dtype
// and tile width; documents longer than the shared tile at each width; many queries and
// documents over many blocks; more query chunks than the grid's y limit; ColBERTv2's
// production (bench) shapes against the GPU reference in full and the CPU oracle on sampled
// pairs, timed with TFLOP/s; the GPU reference itself against the CPU oracle; the same scores
// on every call for ColBERT's 32-token queries; the widths and strides it refuses; errors for
// tensors on the wrong device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fk/element.h"
#include "fk/ops/maxsim.h"
#include "harness/check/op_check.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::MaxSimArgs;

const OpDef& def() { return OpRegistry::global().def(MaxSimArgs::kName); }

Json wl(std::vector<int64_t> lens_q, std::vector<int64_t> lens_d, int64_t dim, const char* dtype = "bf16") {
  return Json{{"query_lens", std::move(lens_q)}, {"doc_lens", std::move(lens_d)}, {"dim", dim}, {"dtype", dtype}};
}

void expect_passes(const Json& w, const std::string& name) {
  const uint64_t seed = test::seed_for(name + w.dump());
  const auto r = bench::check_op(def(), w, seed, DeviceType::cuda);
  EXPECT_TRUE(r.passed) << w.dump() << " seed " << seed << ": " << r.message;
}

std::vector<int32_t> host_offsets(const Tensor& cu) {
  const Tensor h = cu.device().is_cpu() ? cu : cu.to(Device::cpu());
  return std::vector<int32_t>(h.data_as<int32_t>(), h.data_as<int32_t>() + h.numel());
}

TEST(MaxSimGpu, RandomShapesAgainstOracle) {
  FK_REQUIRE_GPU();
  std::mt19937_64 rng(test::seed_for("maxsim_gpu_random"));
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  const char* dtypes[] = {"bf16", "f16", "f32"};
  for (int i = 0; i < 30; ++i) {
    std::vector<int64_t> lens_q(static_cast<size_t>(pick(1, 8))), lens_d(static_cast<size_t>(pick(1, 20)));
    for (int64_t& l : lens_q) l = pick(0, 4) == 0 ? 0 : pick(1, 70);
    for (int64_t& l : lens_d) l = pick(0, 6) == 0 ? 0 : pick(1, 200);
    Json w = wl(lens_q, lens_d, 8 * pick(1, 32), dtypes[i % 3]);
    if (i % 4 == 3) {  // bounds looser than the lengths
      w["max_seqlen_q"] = 100;
      w["max_seqlen_d"] = 250;
    }
    expect_passes(w, "maxsim_gpu_random");
  }
}

// Each tile width keeps 96 KB of document rows on chip: 1536 rows at D <= 32, 768 at 64, 384
// at 128, 192 at 256 (16-bit). Longer documents stream through the tile in chunks; a block
// then holds one document, beside short ones in other blocks.
TEST(MaxSimGpu, LongDocumentsStreamThroughTheTile) {
  FK_REQUIRE_GPU();
  expect_passes(wl({32, 5, 40}, {1600, 3, 1537}, 32), "maxsim_gpu_long");
  expect_passes(wl({32, 70}, {800, 769, 1}, 64, "f16"), "maxsim_gpu_long");
  expect_passes(wl({32, 33, 0, 32}, {400, 0, 900, 385}, 128, "f16"), "maxsim_gpu_long");
  expect_passes(wl({17, 32, 64}, {200, 450, 193, 192}, 256), "maxsim_gpu_long");
  expect_passes(wl({32}, {2000, 5}, 200, "f32"), "maxsim_gpu_long");
}

// Many queries and documents: several documents a block, several query chunks, queries of
// every length packed across the warps' 32-row units.
TEST(MaxSimGpu, ManyQueriesAndDocumentsOverManyBlocks) {
  FK_REQUIRE_GPU();
  std::mt19937_64 rng(test::seed_for("maxsim_gpu_many"));
  std::vector<int64_t> lens_q(100), lens_d(150);
  for (int64_t& l : lens_q) l = static_cast<int64_t>(rng() % 41);
  for (int64_t& l : lens_d) l = static_cast<int64_t>(rng() % 61);
  expect_passes(wl(lens_q, lens_d, 64), "maxsim_gpu_many");
  expect_passes(wl(lens_q, lens_d, 128, "f16"), "maxsim_gpu_many");
  expect_passes(wl(lens_q, lens_d, 48, "f32"), "maxsim_gpu_many");
}

// A block takes at most 64 queries, so 4.2 million one-row queries need more query chunks
// than the grid's y dimension (65535): blocks loop over them.
TEST(MaxSimGpu, QueryChunksPastTheGridLimit) {
  FK_REQUIRE_GPU();
  expect_passes(
      Json{{"queries", 65535 * 64 + 100}, {"query_len", 1}, {"query_len_min", 0}, {"doc_lens", {3, 1}}, {"dim", 8}},
      "maxsim_gpu_grid_y");
}

// The CPU oracle on the chosen queries and documents of a host case: their rows copied into
// a case of their own, f64 scores.
Tensor oracle_on_pairs(const OpCase& host, const std::vector<int64_t>& queries, const std::vector<int64_t>& docs) {
  const std::vector<int32_t> cq = host_offsets(host.tensors[3]), cd = host_offsets(host.tensors[4]);
  auto gather = [](const Tensor& all, const std::vector<int32_t>& cu, const std::vector<int64_t>& pick, Tensor& rows,
                   Tensor& offsets, int32_t& longest) {
    int64_t total = 0;
    for (int64_t i : pick) total += cu[i + 1] - cu[i];
    rows = Tensor::empty({total, all.size(1)}, all.dtype());
    offsets = Tensor::empty({static_cast<int64_t>(pick.size()) + 1}, DType::i32);
    offsets.data_as<int32_t>()[0] = 0;
    longest = 0;
    const size_t row_bytes = static_cast<size_t>(all.size(1)) * dtype_size(all.dtype());
    int64_t at = 0;
    for (size_t k = 0; k < pick.size(); ++k) {
      const int32_t len = cu[pick[k] + 1] - cu[pick[k]];
      std::memcpy(static_cast<char*>(rows.data()) + static_cast<size_t>(at) * row_bytes,
                  static_cast<const char*>(all.data()) + static_cast<size_t>(cu[pick[k]]) * row_bytes,
                  static_cast<size_t>(len) * row_bytes);
      at += len;
      offsets.data_as<int32_t>()[k + 1] = static_cast<int32_t>(at);
      longest = std::max(longest, len);
    }
  };
  Tensor q, d, cu_q, cu_d;
  int32_t max_q = 0, max_d = 0;
  gather(host.tensors[1], cq, queries, q, cu_q, max_q);
  gather(host.tensors[2], cd, docs, d, cu_d, max_d);
  Tensor scores = Tensor::empty({static_cast<int64_t>(queries.size()), static_cast<int64_t>(docs.size())}, DType::f64);
  test::expect_ok(DeviceType::cpu, MaxSimArgs{scores, q, d, cu_q, cu_d, max_q, max_d});
  return scores;
}

// ColBERTv2's shapes: the baseline against the GPU reference on every score and against the
// CPU oracle on sampled (query, document) pairs; then timed.
TEST(MaxSimGpu, BenchShapesAgainstReferencesAndTimed) {
  FK_REQUIRE_GPU();
  const fk_op_fn gpu_reference = OpRegistry::global().gpu_reference(MaxSimArgs::kName);
  ASSERT_NE(gpu_reference, nullptr);
  for (const Json& w : def().bench_workloads) {
    SCOPED_TRACE(w.dump());
    const OpCase host = def().make_case(w, test::seed_for("maxsim_gpu_bench" + w.dump()));
    OpCase dev = bench::case_to_device(def(), host, Device::cuda());
    bench::poison_outputs(def(), dev);
    ASSERT_EQ(test::call_baseline(DeviceType::cuda, dev.as<MaxSimArgs>()), FK_OK) << last_error_message();
    MaxSimArgs ref_args = dev.as<MaxSimArgs>();
    Tensor ref = Tensor::empty({ref_args.scores.shape[0], ref_args.scores.shape[1]}, DType::f64, Device::cuda());
    ref_args.scores = ref;
    ASSERT_EQ(gpu_reference(&ref_args, nullptr), FK_OK) << last_error_message();
    rt::device_synchronize();
    const Tolerance tol = def().tolerance(host, def().tensor_args[0], DType::f32);
    const Tensor got = dev.tensors[0].to(Device::cpu());
    const bench::OutputError e = bench::compare_output("scores", got, ref.to(Device::cpu()), tol);
    EXPECT_EQ(e.num_bad, 0) << bench::describe_output_error(e);
    EXPECT_EQ(test::count_nonfinite(got), 0);

    const int64_t bq = got.size(0), bd = got.size(1);
    const std::vector<int64_t> queries = {0, bq / 2, bq - 1};
    const std::vector<int64_t> docs = {0, 1, bd / 3, bd / 2, bd - 2, bd - 1};
    const Tensor want = oracle_on_pairs(host, queries, docs);
    for (size_t i = 0; i < queries.size(); ++i)
      for (size_t j = 0; j < docs.size(); ++j) {
        const double g = get(got.view(), queries[i], docs[j]),
                     o = get(want.view(), static_cast<int64_t>(i), static_cast<int64_t>(j));
        EXPECT_LE(std::fabs(g - o), tol.atol + tol.rtol * std::fabs(o))
            << "query " << queries[i] << ", document " << docs[j] << ": " << g << ", oracle " << o;
      }

    const double us = test::report_time(def(), dev, 20);
    if (us > 0)
      std::printf("[ perf ] maxsim %-90s %8.1f TFLOP/s\n", w.dump().c_str(), def().cost(dev).flops / us * 1e-6);
  }
}

TEST(MaxSimGpu, GpuReferenceMatchesTheCpuOracle) {
  FK_REQUIRE_GPU();
  const fk_op_fn gpu_reference = OpRegistry::global().gpu_reference(MaxSimArgs::kName);
  ASSERT_NE(gpu_reference, nullptr);
  for (const Json& w : def().test_workloads) {
    SCOPED_TRACE(w.dump());
    const OpCase host = def().make_case(w, test::seed_for("maxsim_gpu_reference" + w.dump()));
    OpCase oracle = bench::make_oracle_case(def(), host);
    bench::run_oracle(def(), oracle);
    OpCase dev = bench::case_to_device(def(), host, Device::cuda());
    MaxSimArgs ref_args = dev.as<MaxSimArgs>();
    Tensor ref = Tensor::empty({ref_args.scores.shape[0], ref_args.scores.shape[1]}, DType::f64, Device::cuda());
    ref_args.scores = ref;
    ASSERT_EQ(gpu_reference(&ref_args, nullptr), FK_OK) << last_error_message();
    rt::device_synchronize();
    const bench::OutputError e =
        bench::compare_output("scores", ref.to(Device::cpu()), oracle.tensors[0], Tolerance{1e-9, 1e-12});
    EXPECT_EQ(e.num_bad, 0) << bench::describe_output_error(e);
  }
}

// ColBERT's queries are 32 rows, one warp's unit each: one sum per (query, document), in one
// order, so every call gives the same bits.
TEST(MaxSimGpu, ColbertScoresAreTheSameEveryCall) {
  FK_REQUIRE_GPU();
  const Json w = {{"queries", 40},     {"query_len", 32}, {"docs", 300},   {"doc_len", 180},
                  {"doc_len_min", 60}, {"dim", 128},      {"dtype", "f16"}};
  const OpCase host = def().make_case(w, test::seed_for("maxsim_gpu_repeat"));
  OpCase dev = bench::case_to_device(def(), host, Device::cuda());
  ASSERT_EQ(test::call_baseline(DeviceType::cuda, dev.as<MaxSimArgs>()), FK_OK) << last_error_message();
  rt::device_synchronize();
  const Tensor first = dev.tensors[0].to(Device::cpu());
  for (int i = 0; i < 3; ++i) {
    bench::poison_outputs(def(), dev);
    ASSERT_EQ(test::call_baseline(DeviceType::cuda, dev.as<MaxSimArgs>()), FK_OK) << last_error_message();
    rt::device_synchronize();
    EXPECT_EQ(test::count_changed_bytes(dev.tensors[0], first), 0) << "call " << i + 2;
  }
}

TEST(MaxSimGpu, RefusesWidthsAndStridesItCannotLoad) {
  FK_REQUIRE_GPU();
  Tensor cu = Tensor::empty({2}, DType::i32);
  cu.data_as<int32_t>()[0] = 0, cu.data_as<int32_t>()[1] = 4;
  const Tensor cu_dev = cu.to(Device::cuda());
  Tensor scores = Tensor::empty({1, 1}, DType::f32, Device::cuda());
  for (const int64_t dim : {12, 264}) {
    const Tensor x = Tensor::zeros({4, dim}, DType::bf16, Device::cuda());
    EXPECT_EQ(test::call_baseline(DeviceType::cuda, MaxSimArgs{scores, x, x, cu_dev, cu_dev, 4, 4}), FK_ERR_UNSUPPORTED)
        << dim;
    EXPECT_NE(std::string(last_error_message()).find("multiples of 8 up to 256"), std::string::npos)
        << last_error_message();
  }
  // Row stride 68 bf16 (136 bytes): rows that do not start 16-byte aligned.
  const Tensor wide = Tensor::zeros({4, 68}, DType::bf16, Device::cuda());
  TensorView x = wide.view();
  x.shape[1] = 64;
  const Tensor packed = Tensor::zeros({4, 64}, DType::bf16, Device::cuda());
  EXPECT_EQ(test::call_baseline(DeviceType::cuda, MaxSimArgs{scores, x, packed, cu_dev, cu_dev, 4, 4}),
            FK_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(last_error_message()).find("16-byte aligned"), std::string::npos) << last_error_message();
  // A start one element past an aligned address.
  TensorView shifted = wide.view();
  shifted.data = shifted.element_ptr(1), shifted.shape[0] = 1, shifted.shape[1] = 64;
  Tensor one = Tensor::empty({2}, DType::i32);
  one.data_as<int32_t>()[0] = 0, one.data_as<int32_t>()[1] = 1;
  EXPECT_EQ(
      test::call_baseline(DeviceType::cuda, MaxSimArgs{scores, shifted, packed, one.to(Device::cuda()), cu_dev, 1, 4}),
      FK_ERR_UNSUPPORTED);
}

TEST(MaxSimGpu, NamedErrors) {
  FK_REQUIRE_GPU();
  Tensor cu = Tensor::empty({2}, DType::i32);
  cu.data_as<int32_t>()[0] = 0, cu.data_as<int32_t>()[1] = 2;
  const Tensor cu_dev = cu.to(Device::cuda());
  const Tensor x = Tensor::zeros({2, 8}, DType::bf16, Device::cuda()), host_x = Tensor::zeros({2, 8}, DType::bf16);
  Tensor scores = Tensor::empty({1, 1}, DType::f32, Device::cuda());
  test::expect_invalid(DeviceType::cuda, MaxSimArgs{scores, host_x, x, cu_dev, cu_dev, 2, 2}, "query must be on cuda");
  test::expect_invalid(DeviceType::cuda, MaxSimArgs{scores, x, x, cu, cu_dev, 2, 2}, "cu_seqlens_q must be on cuda");
  Tensor host_scores = Tensor::empty({1, 1}, DType::f32);
  test::expect_invalid(DeviceType::cuda, MaxSimArgs{host_scores, x, x, cu_dev, cu_dev, 2, 2}, "scores must be on cuda");
  // f64 is the CPU oracle's output dtype only.
  Tensor scores64 = Tensor::empty({1, 1}, DType::f64, Device::cuda());
  test::expect_invalid(DeviceType::cuda, MaxSimArgs{scores64, x, x, cu_dev, cu_dev, 2, 2}, "scores must be f32");
}

}  // namespace
}  // namespace fk
