// embedding_bag beyond the generic oracle tests (which run every test workload, and their
// row-strided views, against the f64 oracle): hand-computed sums, means and weighted sums,
// empty bags, a slice of a packed index array (offsets not starting at 0), i32 and i64
// indices agreeing, out as one slot of DLRM's [B, F + 1, D] buffer, the f64 path the oracle
// takes, the definition (MLPerf's bench shapes, ragged lengths fixed by the workload, cost,
// capture) and errors that name the bad index, offset or field.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "fk/element.h"
#include "fk/ops/recsys.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::EmbeddingBagArgs;
using ops::EmbeddingBagMode;
using test::expect_invalid;
using test::expect_ok;

const OpDef& def() { return OpRegistry::global().def(EmbeddingBagArgs::kName); }

template <class I>
Tensor ints(const std::vector<I>& v, DType dt) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, dt);
  for (size_t i = 0; i < v.size(); ++i) store_element(t.view().element_ptr(static_cast<int64_t>(i)), dt, v[i]);
  return t;
}

Tensor floats(const Shape& shape, const std::vector<double>& v, DType dt = DType::f32) {
  Tensor t = Tensor::empty(shape, dt);
  for (size_t i = 0; i < v.size(); ++i) store_element(t.view().element_ptr(static_cast<int64_t>(i)), dt, v[i]);
  return t;
}

// table row r = [r + 1, 10 (r + 1)] for r in [0, 4).
Tensor small_table() { return floats({4, 2}, {1, 10, 2, 20, 3, 30, 4, 40}); }

void expect_rows(const TensorView& out, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(out.shape[0] * out.shape[1], static_cast<int64_t>(want.size())) << what;
  for (int64_t b = 0; b < out.shape[0]; ++b)
    for (int64_t k = 0; k < out.shape[1]; ++k)
      EXPECT_EQ(get(out, b, k), want[static_cast<size_t>(b * out.shape[1] + k)])
          << what << " [" << b << ", " << k << "]";
}

TEST(EmbeddingBag, HandComputedSumMeanAndWeights) {
  const Tensor table = small_table();
  // Bags {1, 3}, {}, {0, 3, 3}.
  const Tensor idx = ints<int32_t>({1, 3, 0, 3, 3}, DType::i32), off = ints<int32_t>({0, 2, 2, 5}, DType::i32);
  Tensor out = Tensor::empty({3, 2}, DType::f32);
  expect_ok(DeviceType::cpu, EmbeddingBagArgs{out, table, idx, off, {}, EmbeddingBagMode::sum});
  expect_rows(out, {6, 60, 0, 0, 9, 90}, "sum");
  expect_ok(DeviceType::cpu, EmbeddingBagArgs{out, table, idx, off, {}, EmbeddingBagMode::mean});
  expect_rows(out, {3, 30, 0, 0, 3, 30}, "mean");
  const Tensor w = floats({5}, {0.5, 2, -1, 1, 0.25});
  expect_ok(DeviceType::cpu, EmbeddingBagArgs{out, table, idx, off, w, EmbeddingBagMode::sum});
  // 0.5 * row1 + 2 * row3; -row0 + row3 + 0.25 row3.
  expect_rows(out, {9, 90, 0, 0, 4, 40}, "weighted sum");
}

TEST(EmbeddingBag, OffsetsSliceOfAPackedArray) {
  // Two tables' bags packed in one index array (FBGEMM's layout): table A's bags are
  // offsets [0, 2, 3], table B's [3, 3, 6]; each call gets its slice of the offsets.
  const Tensor table = small_table();
  const Tensor idx = ints<int64_t>({0, 1, 2, 3, 3, 1}, DType::i64);
  const Tensor off = ints<int64_t>({0, 2, 3, 3, 6}, DType::i64);
  TensorView first = off.view(), second = off.view();
  first.shape[0] = 3;
  second.shape[0] = 3;
  second.data = second.element_ptr(2);
  Tensor a = Tensor::empty({2, 2}, DType::f32), b = Tensor::empty({2, 2}, DType::f32);
  expect_ok(DeviceType::cpu, EmbeddingBagArgs{a, table, idx, first, {}, EmbeddingBagMode::sum});
  expect_ok(DeviceType::cpu, EmbeddingBagArgs{b, table, idx, second, {}, EmbeddingBagMode::sum});
  expect_rows(a, {3, 30, 3, 30}, "table A");
  expect_rows(b, {0, 0, 10, 100}, "table B");
}

TEST(EmbeddingBag, IndexDtypesAgreeAndOracleWritesF64) {
  const uint64_t seed = test::seed_for("embedding_bag_dtypes");
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor table = ops::random_tensor({50, 24}, dt, seed, 1);
    const std::vector<int64_t> ids = {3, 49, 0, 7, 7, 12, 30, 1, 2};
    const std::vector<int64_t> offs = {0, 4, 4, 5, 9};
    Tensor out32 = Tensor::empty({4, 24}, dt), out64 = Tensor::empty({4, 24}, dt),
           oracle = Tensor::empty({4, 24}, DType::f64);
    expect_ok(DeviceType::cpu,
              EmbeddingBagArgs{out32, table, ints(ids, DType::i32), ints(offs, DType::i32), {}, EmbeddingBagMode::sum});
    expect_ok(DeviceType::cpu,
              EmbeddingBagArgs{out64, table, ints(ids, DType::i64), ints(offs, DType::i64), {}, EmbeddingBagMode::sum});
    expect_ok(
        DeviceType::cpu,
        EmbeddingBagArgs{oracle, table, ints(ids, DType::i64), ints(offs, DType::i64), {}, EmbeddingBagMode::sum});
    EXPECT_EQ(std::memcmp(out32.data(), out64.data(), out32.nbytes()), 0);
    // The oracle's sums in double, against the table read here; the engine dtype is that
    // sum rounded once.
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t k = 0; k < 24; ++k) {
        double want = 0;
        for (int64_t i = offs[b]; i < offs[b + 1]; ++i) want += get(table.view(), ids[i], k);
        EXPECT_EQ(get(oracle.view(), b, k), want);
        const Tensor one = floats({1}, {want}, dt);
        EXPECT_EQ(get(out32.view(), b, k), get(one.view(), 0));
      }
  }
}

// DLRM's use: each table's pooled rows go into their slot of the interaction's [B, F + 1, D]
// input; the other slots stay as they were.
TEST(EmbeddingBag, WritesOneSlotOfAWiderBuffer) {
  const uint64_t seed = test::seed_for("embedding_bag_slot");
  const int64_t B = 5, F = 3, D = 16;
  const Tensor table = ops::random_tensor({40, D}, DType::bf16, seed, 1);
  const Tensor idx = ops::random_int_tensor({12}, DType::i32, seed, 2, 0, 40);
  const Tensor off = ints<int32_t>({0, 3, 3, 8, 11, 12}, DType::i32);
  Tensor packed = Tensor::empty({B, D}, DType::bf16);
  expect_ok(DeviceType::cpu, EmbeddingBagArgs{packed, table, idx, off, {}, EmbeddingBagMode::sum});
  const Tensor buffer = ops::random_tensor({B, F + 1, D}, DType::bf16, seed, 3);
  const Tensor before = buffer.clone();
  TensorView slot = buffer.view();
  slot.rank = 2;
  slot.shape[0] = B;
  slot.shape[1] = D;
  slot.strides[0] = (F + 1) * D;
  slot.strides[1] = 1;
  slot.data = slot.element_ptr(2 * D);  // vector 2: the second table's slot
  expect_ok(DeviceType::cpu, EmbeddingBagArgs{slot, table, idx, off, {}, EmbeddingBagMode::sum});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t f = 0; f <= F; ++f)
      for (int64_t k = 0; k < D; ++k) {
        const double got = get(buffer.view(), b, f, k);
        EXPECT_EQ(got, f == 2 ? get(packed.view(), b, k) : get(before.view(), b, f, k)) << b << " " << f << " " << k;
      }
}

TEST(EmbeddingBag, DefinitionWorkloadsAndCost) {
  EXPECT_EQ(def().family, "recsys");
  EXPECT_EQ(def().level, "L1");
  EXPECT_EQ(def().architectures, std::vector<std::string>{"dlrm"});
  // MLPerf's shapes: 16384 one-hot samples and ragged multi-hot bags up to 100, D = 128,
  // tables of at most 1 GiB.
  bool one_hot = false, multi_hot = false, single = false;
  for (const Json& w : def().bench_workloads) {
    EXPECT_EQ(ops::wl_int(w, "dim"), 128);
    const double table_bytes =
        static_cast<double>(ops::wl_int(w, "rows")) * 128 * static_cast<double>(dtype_size(ops::wl_dtype(w)));
    EXPECT_LE(table_bytes, 1024.0 * 1024 * 1024) << w.dump();
    one_hot |= ops::wl_int(w, "batch") == 16384 && ops::wl_int(w, "bag_size") == 1;
    multi_hot |= ops::wl_int(w, "batch") == 16384 && ops::wl_int(w, "bag_size") == 100 && w.contains("bag_size_min");
    single |= ops::wl_int(w, "batch") == 1;
  }
  EXPECT_TRUE(one_hot && multi_hot && single);

  // Ragged lengths come from the workload alone: the same offsets for any seed, within range.
  const Json ragged = {{"batch", 64}, {"bag_size", 9}, {"bag_size_min", 2}, {"rows", 100}, {"dim", 8}};
  const OpCase c1 = def().make_case(ragged, 1), c2 = def().make_case(ragged, 2);
  ASSERT_EQ(c1.tensors[3].nbytes(), c2.tensors[3].nbytes());
  EXPECT_EQ(std::memcmp(c1.tensors[3].data(), c2.tensors[3].data(), c1.tensors[3].nbytes()), 0);
  bool varied = false;
  for (int64_t b = 0; b < 64; ++b) {
    const int64_t len = get_index(c1.tensors[3].view(), b + 1) - get_index(c1.tensors[3].view(), b);
    EXPECT_GE(len, 2);
    EXPECT_LE(len, 9);
    varied |= len != get_index(c1.tensors[3].view(), 1);
  }
  EXPECT_TRUE(varied);

  // Cost: the rows the bags read (not the table), their indices and weights, the offsets, out.
  const Json w = {{"bag_sizes", {3, 0, 2}}, {"rows", 1000},     {"dim", 16},          {"dtype", "f16"},
                  {"index_dtype", "i64"},   {"weighted", true}, {"unused_before", 2}, {"unused_after", 1}};
  const OpCase c = def().make_case(w, test::seed_for("embedding_bag_def"));
  const auto& a = c.as<EmbeddingBagArgs>();
  EXPECT_EQ(a.indices.shape[0], 8);
  EXPECT_EQ(get_index(a.offsets, 0), 2);
  EXPECT_EQ(get_index(a.offsets, 3), 7);
  EXPECT_EQ(def().cost(c).bytes, 5.0 * (16 * 2 + 8 + 2) + 4 * 8 + 3 * 16 * 2);
  EXPECT_EQ(def().cost(c).flops, 5.0 * 16);
  const Json back = def().workload_from_call(c.args_ptr());
  EXPECT_EQ(back["bag_sizes"], Json({3, 0, 2}));
  EXPECT_EQ(back["unused_before"], 2);
  EXPECT_EQ(back["unused_after"], 1);
  EXPECT_EQ(back["weighted"], true);
  EXPECT_EQ(back["index_dtype"], "i64");
  // f32 sums of long bags get room for their fp32 roundings.
  const OpCase f32 = def().make_case({{"batch", 2}, {"bag_size", 100}, {"rows", 10}, {"dim", 4}, {"dtype", "f32"}}, 1);
  EXPECT_GT(def().tolerance(f32, def().tensor_args[0], DType::f32).atol, default_tolerance(DType::f32).atol);
  try {
    def().make_case(Json{{"batch", 2}, {"rows", 5}, {"dim", 4}}, 1);
    ADD_FAILURE() << "a workload without bag sizes was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bag_size"), std::string::npos) << e.what();
  }
}

TEST(EmbeddingBag, BadIndicesAndOffsetsAreNamed) {
  const Tensor table = small_table();
  Tensor out = Tensor::zeros({2, 2}, DType::f32);
  const Tensor off = ints<int32_t>({0, 2, 3}, DType::i32);
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{out, table, ints<int32_t>({0, 4, 1}, DType::i32), off, {}, {}},
                 "indices[1] = 4 (bag 0) is out of range for a table of 4 rows");
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{out, table, ints<int32_t>({0, 1, -1}, DType::i32), off, {}, {}},
                 "indices[2] = -1 (bag 1) is out of range");
  // Nothing is written before the check: out is still zeros.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out.data_as<float>()[i], 0.f);
  // An index outside every bag is never read, so it may be anything.
  expect_ok(DeviceType::cpu, EmbeddingBagArgs{out, table, ints<int32_t>({0, 1, 2, 99}, DType::i32), off, {}, {}});

  const Tensor idx = ints<int32_t>({0, 1, 2}, DType::i32);
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{out, table, idx, ints<int32_t>({0, 2, 1}, DType::i32), {}, {}},
                 "offsets must not decrease: offsets[2] = 1 after 2");
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{out, table, idx, ints<int32_t>({0, 2, 4}, DType::i32), {}, {}},
                 "offsets[2] = 4 is past the 3 indices");
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{out, table, idx, ints<int32_t>({-1, 2, 3}, DType::i32), {}, {}},
                 "offsets[0] = -1 must lie in [0, 3]");
}

TEST(EmbeddingBag, NamedErrors) {
  const Tensor table = small_table();
  const Tensor idx = ints<int32_t>({0, 1, 2}, DType::i32), off = ints<int32_t>({0, 2, 3}, DType::i32);
  Tensor out = Tensor::empty({2, 2}, DType::f32);
  const EmbeddingBagMode sum = EmbeddingBagMode::sum;
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{out, table, idx, ints<int64_t>({0, 2, 3}, DType::i64), {}, sum},
                 "offsets must be i32");
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{out, table, floats({3}, {0, 1, 2}), off, {}, sum},
                 "indices must be one of i32/i64");
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{out, ints<int32_t>({1, 2, 3, 4}, DType::i32), idx, off, {}, sum},
                 "table must have rank 2");
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{out, floats({4, 2}, {}, DType::i32), idx, off, {}, sum},
                 "table must be one of f32/f16/bf16");
  Tensor wide = Tensor::empty({2, 3}, DType::f32), half = Tensor::empty({2, 2}, DType::f16);
  Tensor three = Tensor::empty({3, 2}, DType::f32);
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{wide, table, idx, off, {}, sum}, "out must be [2, 2]");
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{three, table, idx, off, {}, sum}, "out must be [2, 2]");
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{half, table, idx, off, {}, sum}, "out must be f32");
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{out, table, idx, off, {}, static_cast<EmbeddingBagMode>(2)},
                 "max pooling, PyTorch's mode 2, is not supported");
  const Tensor w = floats({3}, {1, 1, 1});
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{out, table, idx, off, w, EmbeddingBagMode::mean},
                 "per_sample_weights need mode sum");
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{out, table, idx, off, floats({2}, {1, 1}), sum},
                 "per_sample_weights must have one weight per index (3)");
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{out, table, idx, off, floats({3}, {1, 1, 1}, DType::f16), sum},
                 "per_sample_weights must be f32");
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{out, table, idx, Tensor::empty({0}, DType::i32), {}, sum},
                 "offsets must be [B + 1]");
  // out over the table's own bytes.
  TensorView inside = table.view();
  inside.shape[0] = 2;
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{inside, table, idx, off, {}, sum}, "out must not overlap table");
  TensorView on_gpu = idx.view();
  on_gpu.device = Device::cuda();
  expect_invalid(DeviceType::cpu, EmbeddingBagArgs{out, table, on_gpu, off, {}, sum}, "indices must be on cpu");
}

}  // namespace
}  // namespace fk
