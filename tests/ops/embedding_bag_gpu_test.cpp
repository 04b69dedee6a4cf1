// embedding_bag's CUDA baseline on what the generic GPU oracle test (every test workload, and
// their row-strided views) does not cover: MLPerf's bench shapes against the CPU
// implementation (timed, with the bandwidth over the rows read), random shapes of every
// dtype, index type and word width against the oracle, out as a slot of DLRM's
// [B, F + 1, D] buffer with the other slots untouched, the documented handling of bad
// metadata (an index outside the table adds nothing and its row is not read; offsets are
// clamped, so no index past the array is read), the same bits on every call, and errors for
// tensors on the wrong device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fk/element.h"
#include "fk/ops/recsys.h"
#include "harness/check/op_check.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::EmbeddingBagArgs;
using ops::EmbeddingBagMode;

const OpDef& def() { return OpRegistry::global().def(EmbeddingBagArgs::kName); }

void expect_passes(const Json& w, const std::string& name) {
  const uint64_t seed = test::seed_for(name + w.dump());
  const auto r = bench::check_op(def(), w, seed, DeviceType::cuda);
  EXPECT_TRUE(r.passed) << w.dump() << " seed " << seed << ": " << r.message;
}

template <class I>
Tensor ints(const std::vector<I>& v, DType dt) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, dt);
  for (size_t i = 0; i < v.size(); ++i) store_element(t.view().element_ptr(static_cast<int64_t>(i)), dt, v[i]);
  return t;
}

// Host case and its device copy from a workload; CPU implementation (engine dtype) and CUDA
// baseline on them; out within the op's tolerance of the CPU result.
void check_against_cpu(const Json& w, bool time_it) {
  SCOPED_TRACE(w.dump());
  const OpCase host = def().make_case(w, test::seed_for("embedding_bag_gpu" + w.dump()));
  OpCase dev = bench::case_to_device(def(), host, Device::cuda());
  bench::poison_outputs(def(), dev);
  ASSERT_EQ(test::call_baseline(DeviceType::cpu, host.as<EmbeddingBagArgs>()), FK_OK) << last_error_message();
  ASSERT_EQ(test::call_baseline(DeviceType::cuda, dev.as<EmbeddingBagArgs>()), FK_OK) << last_error_message();
  rt::device_synchronize();
  const Tensor got = dev.tensors[0].to(Device::cpu());
  EXPECT_EQ(test::count_nonfinite(got), 0) << "unwritten (poisoned) elements";
  // The CPU result is rounded once from double; the GPU's from an fp32 sum: a unit in the
  // last place apart at most, plus the fp32 sum's own error.
  const Tolerance tol = def().tolerance(host, def().tensor_args[0], got.dtype());
  test::expect_views_near(got.view(), host.tensors[0].view(), tol, "out");
  if (time_it) test::report_time(def(), dev);
}

TEST(EmbeddingBagGpu, MlperfBenchShapesMatchCpu) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().bench_workloads) check_against_cpu(w, true);
}

TEST(EmbeddingBagGpu, RandomShapesAgainstOracle) {
  FK_REQUIRE_GPU();
  std::mt19937_64 rng(test::seed_for("embedding_bag_gpu_random"));
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  const char* dtypes[] = {"bf16", "f16", "f32"};
  for (int i = 0; i < 36; ++i) {
    // Widths on both paths: multiples of the 16-byte word (8 elements covers all dtypes) and
    // odd ones; up to 600 elements, past 32 words a row.
    const int64_t dim = i % 3 == 0 ? pick(1, 40) : 8 * pick(1, 75);
    Json w = {{"batch", pick(0, 300)},  {"bag_size", pick(0, 40)},
              {"rows", pick(1, 3000)},  {"dim", dim},
              {"dtype", dtypes[i % 3]}, {"index_dtype", i % 2 == 0 ? "i32" : "i64"}};
    w["bag_size_min"] = pick(0, ops::wl_int(w, "bag_size"));
    if (i % 4 == 1) w["mode"] = "mean";
    if (i % 4 == 3) w["weighted"] = true;
    if (i % 5 == 2) {
      w["unused_before"] = pick(1, 9);
      w["unused_after"] = pick(1, 9);
    }
    expect_passes(w, "embedding_bag_gpu_random");
  }
}

// Slots of one [B, F + 1, D] buffer (row stride (F + 1) D), one table each, as the DLRM
// forward writes them: each slot its own sums, the dense slot 0 untouched.
TEST(EmbeddingBagGpu, WritesSlotsOfTheInteractionBuffer) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("embedding_bag_gpu_slots");
  const int64_t B = 37, F = 3, D = 128;
  for (DType dt : {DType::bf16, DType::f32}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor buffer = ops::random_tensor({B, F + 1, D}, dt, seed, 9);
    Tensor buffer_dev = buffer.to(Device::cuda());
    Tensor want = buffer.clone();
    for (int64_t f = 1; f <= F; ++f) {
      const Json w = {{"batch", B},  {"bag_size", 12}, {"bag_size_min", 0},
                      {"rows", 500}, {"dim", D},       {"dtype", std::string(dtype_name(dt))}};
      const OpCase host = def().make_case(w, seed + static_cast<uint64_t>(f));
      const OpCase dev = bench::case_to_device(def(), host, Device::cuda());
      auto slot = [&](const Tensor& t) {
        TensorView v = t.view();
        v.rank = 2;
        v.shape[0] = B;
        v.shape[1] = D;
        v.strides[0] = (F + 1) * D;
        v.strides[1] = 1;
        v.data = v.element_ptr(f * D);
        return v;
      };
      EmbeddingBagArgs cpu = host.as<EmbeddingBagArgs>(), gpu = dev.as<EmbeddingBagArgs>();
      cpu.out = slot(want);
      gpu.out = slot(buffer_dev);
      test::expect_ok(DeviceType::cpu, cpu);
      test::expect_ok(DeviceType::cuda, gpu);
    }
    rt::device_synchronize();
    const Tensor got = buffer_dev.to(Device::cpu());
    const Tolerance tol = default_tolerance(dt);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t f = 0; f <= F; ++f)
        for (int64_t k = 0; k < D; ++k) {
          const double g = get(got.view(), b, f, k), e = get(want.view(), b, f, k);
          if (f == 0)
            ASSERT_EQ(g, e) << "the dense slot was written at " << b << ", " << k;
          else
            ASSERT_LE(std::fabs(g - e), tol.atol + tol.rtol * std::fabs(e)) << b << " " << f << " " << k;
        }
  }
}

// Bad metadata on the device (fk/ops/recsys.h): an index outside [0, V) adds nothing and its
// row is never read; offsets are clamped into [0, N]. The table view's neighbouring rows and
// the indices past the array hold values that would show (NaN) if read.
TEST(EmbeddingBagGpu, BadMetadataReadsNothingOutside) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("embedding_bag_gpu_bad");
  const int64_t V = 20, D = 16;
  for (DType dt : {DType::bf16, DType::f32}) {
    SCOPED_TRACE(dtype_name(dt));
    // Rows 0 and V + 1 of the storage are NaN; the table view is rows 1..V.
    Tensor storage = ops::random_tensor({V + 2, D}, dt, seed, 1);
    for (int64_t k = 0; k < D; ++k) {
      set(storage.view(), std::numeric_limits<double>::quiet_NaN(), 0, k);
      set(storage.view(), std::numeric_limits<double>::quiet_NaN(), V + 1, k);
    }
    const Tensor storage_dev = storage.to(Device::cuda());
    auto table_of = [&](const Tensor& s) {
      TensorView v = s.view();
      v.shape[0] = V;
      v.data = v.element_ptr(D);
      return v;
    };
    // Bags {3, -1, 7}, {V, 5}, {2^31 - 1}, {}: the bad ids would read the NaN rows around
    // the view (or fault); the mean counts them. Two guard ids follow the 6 indices.
    const Tensor idx_storage =
        ints<int32_t>({3, -1, 7, static_cast<int32_t>(V), 5, std::numeric_limits<int32_t>::max(), 0, 0}, DType::i32);
    const Tensor idx_dev = idx_storage.to(Device::cuda());
    TensorView idx = idx_dev.view();
    idx.shape[0] = 6;
    for (EmbeddingBagMode mode : {EmbeddingBagMode::sum, EmbeddingBagMode::mean}) {
      const Tensor off = ints<int32_t>({0, 3, 5, 6, 6}, DType::i32).to(Device::cuda());
      Tensor out = Tensor::empty({4, D}, dt, Device::cuda());
      test::expect_ok(DeviceType::cuda, EmbeddingBagArgs{out, table_of(storage_dev), idx, off, {}, mode});
      rt::device_synchronize();
      const Tensor got = out.to(Device::cpu());
      const TensorView table = table_of(storage);
      for (int64_t k = 0; k < D; ++k) {
        const double div0 = mode == EmbeddingBagMode::mean ? 3 : 1, div1 = mode == EmbeddingBagMode::mean ? 2 : 1;
        const double want[4] = {(get(table, 3, k) + get(table, 7, k)) / div0, get(table, 5, k) / div1, 0, 0};
        for (int64_t b = 0; b < 4; ++b) {
          const double g = get(got.view(), b, k);
          ASSERT_TRUE(std::isfinite(g)) << "bag " << b << " read a row outside the table";
          EXPECT_NEAR(g, want[b], 2e-2 * (1 + std::fabs(want[b]))) << "bag " << b << " column " << k;
        }
      }
    }
    // Offsets past the 6 indices, and one decreasing, are clamped into [0, 6]: bags [0, 3),
    // [3, 6) (100 clamped), [6, 6) (its end 2 clamped up to its start), [2, 6). The guard ids
    // after the array (row 0: finite, not zero) would show in the empty bag if it were read.
    const Tensor off = ints<int32_t>({0, 3, 100, 2, 6}, DType::i32).to(Device::cuda());
    Tensor out = Tensor::empty({4, D}, dt, Device::cuda());
    test::expect_ok(DeviceType::cuda,
                    EmbeddingBagArgs{out, table_of(storage_dev), idx, off, {}, EmbeddingBagMode::sum});
    rt::device_synchronize();
    const Tensor got = out.to(Device::cpu());
    const TensorView table = table_of(storage);
    for (int64_t k = 0; k < D; ++k) {
      const double want[4] = {get(table, 3, k) + get(table, 7, k), get(table, 5, k), 0,
                              get(table, 7, k) + get(table, 5, k)};
      for (int64_t b = 0; b < 4; ++b)
        EXPECT_NEAR(get(got.view(), b, k), want[b], 2e-2 * (1 + std::fabs(want[b]))) << "bag " << b << " column " << k;
    }
  }
}

TEST(EmbeddingBagGpu, SameBitsOnEveryCall) {
  FK_REQUIRE_GPU();
  const Json w = {{"batch", 2048}, {"bag_size", 100}, {"bag_size_min", 1}, {"rows", 100000}, {"dim", 128}};
  const OpCase host = def().make_case(w, test::seed_for("embedding_bag_gpu_bits"));
  OpCase dev = bench::case_to_device(def(), host, Device::cuda());
  test::expect_ok(DeviceType::cuda, dev.as<EmbeddingBagArgs>());
  rt::device_synchronize();
  const Tensor first = dev.tensors[0].to(Device::cpu());
  for (int i = 0; i < 3; ++i) {
    bench::poison_outputs(def(), dev);
    test::expect_ok(DeviceType::cuda, dev.as<EmbeddingBagArgs>());
    rt::device_synchronize();
    const Tensor again = dev.tensors[0].to(Device::cpu());
    EXPECT_EQ(std::memcmp(first.data(), again.data(), first.nbytes()), 0) << "call " << i + 2;
  }
}

TEST(EmbeddingBagGpu, NamedErrors) {
  FK_REQUIRE_GPU();
  const Tensor table = Tensor::empty({10, 8}, DType::bf16, Device::cuda());
  const Tensor idx = Tensor::zeros({4}, DType::i32, Device::cuda()),
               off = Tensor::zeros({3}, DType::i32, Device::cuda());
  Tensor out = Tensor::empty({2, 8}, DType::bf16, Device::cuda());
  const Tensor host_idx = Tensor::zeros({4}, DType::i32);
  Tensor host_out = Tensor::empty({2, 8}, DType::bf16);
  test::expect_invalid(DeviceType::cuda, EmbeddingBagArgs{out, table, host_idx, off, {}, EmbeddingBagMode::sum},
                       "indices must be on cuda");
  test::expect_invalid(DeviceType::cuda, EmbeddingBagArgs{host_out, table, idx, off, {}, EmbeddingBagMode::sum},
                       "out must be on cuda");
  // f64 is the CPU oracle's output dtype only.
  Tensor out64 = Tensor::empty({2, 8}, DType::f64, Device::cuda());
  test::expect_invalid(DeviceType::cuda, EmbeddingBagArgs{out64, table, idx, off, {}, EmbeddingBagMode::sum},
                       "out must be bf16");
}

}  // namespace
}  // namespace fk
