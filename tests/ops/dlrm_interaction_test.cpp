// dlrm_interaction beyond the generic oracle tests (which run every test workload, and their
// row-strided views, against the f64 oracle): a hand-computed sample, the pair order against
// an explicit list of DLRM's lower-triangle pairs, dense and sparse as slots of one shared
// [B, F + 1, D] buffer with a padded out (the DLRM forward's layout), the dense copy alone
// (F = 0), the f64 path the oracle takes, the definition (MLPerf's shapes: 479 features;
// cost; capture) and errors that name the wrong field.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "fk/element.h"
#include "fk/ops/recsys.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::DlrmInteractionArgs;
using test::expect_invalid;
using test::expect_ok;

const OpDef& def() { return OpRegistry::global().def(DlrmInteractionArgs::kName); }

Tensor floats(const Shape& shape, const std::vector<double>& v, DType dt = DType::f32) {
  Tensor t = Tensor::empty(shape, dt);
  for (size_t i = 0; i < v.size(); ++i) store_element(t.view().element_ptr(static_cast<int64_t>(i)), dt, v[i]);
  return t;
}

// A view of `t`'s elements with the given shape and strides, `offset` elements in.
TensorView view_of(const Tensor& t, std::initializer_list<int64_t> shape, std::initializer_list<int64_t> strides,
                   int64_t offset = 0) {
  TensorView v = t.view();
  v.data = v.element_ptr(offset);
  v.rank = static_cast<int32_t>(shape.size());
  int i = 0;
  for (int64_t s : shape) v.shape[i++] = s;
  i = 0;
  for (int64_t s : strides) v.strides[i++] = s;
  return v;
}

TEST(DlrmInteraction, HandComputedSample) {
  // x0 = [1, 2], x1 = [3, 4], x2 = [5, 6]: pairs (1,0) = 11, (2,0) = 17, (2,1) = 39.
  const Tensor dense = floats({1, 2}, {1, 2}), sparse = floats({1, 2, 2}, {3, 4, 5, 6});
  Tensor out = Tensor::empty({1, 5}, DType::f32);
  expect_ok(DeviceType::cpu, DlrmInteractionArgs{out, dense, sparse});
  const float want[5] = {1, 2, 11, 17, 39};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out.data_as<float>()[i], want[i]) << i;
}

// facebookresearch/dlrm's order: li = [i for i in range(n) for j in range(i)], lj likewise.
TEST(DlrmInteraction, PairOrderIsTheLowerTriangleRowMajor) {
  const uint64_t seed = test::seed_for("dlrm_interaction_order");
  const int64_t B = 3, F = 6, D = 7;
  const Tensor dense = ops::random_tensor({B, D}, DType::f32, seed, 1);
  const Tensor sparse = ops::random_tensor({B, F, D}, DType::f32, seed, 2);
  Tensor out = Tensor::empty({B, D + (F + 1) * F / 2}, DType::f64);
  expect_ok(DeviceType::cpu, DlrmInteractionArgs{out, dense, sparse});
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t i = 0; i <= F; ++i)
    for (int64_t j = 0; j < i; ++j) pairs.emplace_back(i, j);
  ASSERT_EQ(pairs.size(), 21u);
  auto x = [&](int64_t b, int64_t v, int64_t k) {
    return v == 0 ? get(dense.view(), b, k) : get(sparse.view(), b, v - 1, k);
  };
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t k = 0; k < D; ++k) EXPECT_EQ(get(out.view(), b, k), get(dense.view(), b, k));
    for (size_t p = 0; p < pairs.size(); ++p) {
      double dot = 0;
      for (int64_t k = 0; k < D; ++k) dot += x(b, pairs[p].first, k) * x(b, pairs[p].second, k);
      EXPECT_EQ(get(out.view(), b, D + static_cast<int64_t>(p)), dot) << "sample " << b << " pair " << p;
    }
  }
}

// The DLRM forward's layout: the bottom MLP's output and the pooled embeddings in one
// [B, F + 1, D] buffer (dense = vector 0, sparse = vectors 1..F), out rows padded to a
// multiple of 8 elements. The same values as packed tensors, and out's padding untouched.
TEST(DlrmInteraction, SharedBufferAndPaddedOut) {
  const uint64_t seed = test::seed_for("dlrm_interaction_shared");
  const int64_t B = 4, F = 26, D = 16, W = D + (F + 1) * F / 2, Wp = (W + 7) / 8 * 8;
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor all = ops::random_tensor({B, F + 1, D}, dt, seed, 1);
    Tensor dense = Tensor::empty({B, D}, dt), sparse = Tensor::empty({B, F, D}, dt);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t k = 0; k < D; ++k) {
        set(dense.view(), get(all.view(), b, 0, k), b, k);
        for (int64_t f = 0; f < F; ++f) set(sparse.view(), get(all.view(), b, f + 1, k), b, f, k);
      }
    Tensor packed = Tensor::empty({B, W}, dt);
    expect_ok(DeviceType::cpu, DlrmInteractionArgs{packed, dense, sparse});
    const Tensor padded = ops::random_tensor({B, Wp}, dt, seed, 2);
    const Tensor before = padded.clone();
    expect_ok(DeviceType::cpu,
              DlrmInteractionArgs{view_of(padded, {B, W}, {Wp, 1}), view_of(all, {B, D}, {(F + 1) * D, 1}),
                                  view_of(all, {B, F, D}, {(F + 1) * D, D, 1}, D)});
    for (int64_t b = 0; b < B; ++b)
      for (int64_t k = 0; k < Wp; ++k) {
        const double got = get(padded.view(), b, k);
        EXPECT_EQ(got, k < W ? get(packed.view(), b, k) : get(before.view(), b, k)) << b << ", " << k;
      }
  }
}

TEST(DlrmInteraction, NoSparseFeaturesCopiesTheDenseRow) {
  const Tensor dense = ops::random_tensor({3, 10}, DType::bf16, test::seed_for("dlrm_interaction_f0"), 1);
  const Tensor sparse = Tensor::empty({3, 0, 10}, DType::bf16);
  Tensor out = Tensor::empty({3, 10}, DType::bf16);
  expect_ok(DeviceType::cpu, DlrmInteractionArgs{out, dense, sparse});
  EXPECT_EQ(std::memcmp(out.data(), dense.data(), dense.nbytes()), 0);
}

TEST(DlrmInteraction, DefinitionWorkloadsAndCost) {
  EXPECT_EQ(def().family, "recsys");
  EXPECT_EQ(def().level, "L2");
  EXPECT_EQ(def().architectures, std::vector<std::string>{"dlrm"});
  bool mlperf = false;
  for (const Json& w : def().bench_workloads)
    mlperf |= ops::wl_int(w, "batch") == 16384 && ops::wl_int(w, "features") == 26 && ops::wl_int(w, "dim") == 128;
  EXPECT_TRUE(mlperf);
  const Json w = {{"batch", 2}, {"features", 26}, {"dim", 128}, {"dtype", "f16"}};
  const OpCase c = def().make_case(w, test::seed_for("dlrm_interaction_def"));
  const auto& a = c.as<DlrmInteractionArgs>();
  EXPECT_EQ(a.out.shape[1], 479);  // MLPerf's top MLP input: 128 + 351
  EXPECT_EQ(def().cost(c).bytes, 2.0 * 2 * (128 + 26 * 128 + 479));
  EXPECT_EQ(def().cost(c).flops, 2.0 * 2 * 351 * 128);
  EXPECT_EQ(def().workload_from_call(c.args_ptr()), w);
  // f32 dots get room for their fp32 accumulation.
  const OpCase f32 = def().make_case({{"batch", 1}, {"features", 2}, {"dim", 128}, {"dtype", "f32"}}, 1);
  EXPECT_GT(def().tolerance(f32, def().tensor_args[0], DType::f32).atol, default_tolerance(DType::f32).atol);
  try {
    def().make_case(Json{{"features", 3}}, 1);
    ADD_FAILURE() << "a workload without batch was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("batch"), std::string::npos) << e.what();
  }
}

TEST(DlrmInteraction, NamedErrors) {
  const Tensor dense = Tensor::empty({2, 8}, DType::bf16), sparse = Tensor::empty({2, 3, 8}, DType::bf16);
  Tensor out = Tensor::empty({2, 14}, DType::bf16);
  expect_ok(DeviceType::cpu, DlrmInteractionArgs{out, dense, sparse});
  expect_invalid(DeviceType::cpu, DlrmInteractionArgs{out, sparse, sparse}, "dense must have rank 2");
  expect_invalid(DeviceType::cpu, DlrmInteractionArgs{out, dense, dense}, "sparse must have rank 3");
  expect_invalid(DeviceType::cpu, DlrmInteractionArgs{out, Tensor::empty({2, 8}, DType::i32), sparse},
                 "dense must be one of f32/f16/bf16");
  expect_invalid(DeviceType::cpu, DlrmInteractionArgs{out, dense, Tensor::empty({2, 3, 8}, DType::f16)},
                 "sparse must be bf16");
  expect_invalid(DeviceType::cpu, DlrmInteractionArgs{out, dense, Tensor::empty({3, 3, 8}, DType::bf16)},
                 "sparse must be [2, F, 8]");
  expect_invalid(DeviceType::cpu, DlrmInteractionArgs{out, dense, Tensor::empty({2, 3, 7}, DType::bf16)},
                 "sparse must be [2, F, 8]");
  Tensor narrow = Tensor::empty({2, 13}, DType::bf16);
  expect_invalid(DeviceType::cpu, DlrmInteractionArgs{narrow, dense, sparse},
                 "out must be [2, 14] (D + (F + 1) F / 2 for D = 8, F = 3)");
  Tensor half = Tensor::empty({2, 14}, DType::f16);
  expect_invalid(DeviceType::cpu, DlrmInteractionArgs{half, dense, sparse}, "out must be bf16");
  // Every other element of a wider buffer: not contiguous in D.
  const Tensor wide = Tensor::empty({2, 3, 16}, DType::bf16);
  expect_invalid(DeviceType::cpu, DlrmInteractionArgs{out, dense, view_of(wide, {2, 3, 8}, {48, 16, 2})},
                 "sparse [B, F, D] must have a contiguous last dimension");
  expect_invalid(DeviceType::cpu, DlrmInteractionArgs{out, dense, view_of(wide, {2, 3, 8}, {48, 4, 1})},
                 "sparse feature rows must not overlap");
  expect_invalid(DeviceType::cpu, DlrmInteractionArgs{out, dense, view_of(wide, {2, 3, 8}, {-48, 16, 1}, 48)},
                 "sparse strides must be non-negative");
  // out over the inputs' bytes.
  Tensor buffer = Tensor::empty({2, 4, 8}, DType::bf16);
  expect_invalid(DeviceType::cpu,
                 DlrmInteractionArgs{view_of(buffer, {2, 14}, {32, 1}), view_of(buffer, {2, 8}, {32, 1}),
                                     view_of(buffer, {2, 3, 8}, {32, 8, 1}, 8)},
                 "out must not overlap dense");
  TensorView on_gpu = dense.view();
  on_gpu.device = Device::cuda();
  expect_invalid(DeviceType::cpu, DlrmInteractionArgs{out, on_gpu, sparse}, "dense must be on cpu");
}

}  // namespace
}  // namespace fk
