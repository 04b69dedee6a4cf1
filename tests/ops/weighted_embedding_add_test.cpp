// weighted_embedding_add beyond the generic oracle test: hand-computed values (bilinear
// weights that sum to one, a repeated row), the update is in place and leaves ids, weights
// and table alone, row-strided out and table views, and named errors (a bad id leaves out
// untouched).
#include <gtest/gtest.h>

#include "fk/ops/weighted_embedding.h"
#include "ops/norm_act_support.h"
#include "ops/rope_test_util.h"

namespace fk {
namespace {

using ops::WeightedEmbeddingAddArgs;
using test::expect_invalid;
using test::expect_ok;
using test::host_tensor;

TEST(WeightedEmbeddingAdd, AddsTheWeightedRowsInPlace) {
  // A 2 x 2 grid of 3-wide rows; token 0 sits a quarter of the way between rows 0 and 1 and
  // half way between 0 and 2; token 1 takes row 3 twice.
  const Tensor table = host_tensor({4, 3}, DType::f32, {0, 0, 8, /**/ 4, 0, 8, /**/ 0, 4, 8, /**/ 4, 4, 0});
  const Tensor ids = host_tensor({2, 4}, DType::i32, {0, 1, 2, 3, /**/ 3, 3, 0, 0});
  const Tensor w = host_tensor({2, 4}, DType::f32, {0.375, 0.125, 0.375, 0.125, /**/ 0.5, 0.25, 0, 0});
  Tensor out = host_tensor({2, 3}, DType::f32, {1, 1, 1, /**/ -1, 0, 2});
  const Tensor ids0 = ids.clone(), w0 = w.clone(), table0 = table.clone();
  expect_ok(DeviceType::cpu, WeightedEmbeddingAddArgs{out, ids, w, table});
  const float* o = out.data_as<float>();
  EXPECT_FLOAT_EQ(o[0], 1 + 4 * 0.25f);  // x: the rows at x = 4 weigh 0.125 + 0.125
  EXPECT_FLOAT_EQ(o[1], 1 + 4 * 0.5f);   // y: the rows at y = 4 weigh 0.375 + 0.125
  EXPECT_FLOAT_EQ(o[2], 1 + 8 * 0.875f); // the first three rows hold 8
  EXPECT_FLOAT_EQ(o[3], -1 + 4 * 0.75f);
  EXPECT_FLOAT_EQ(o[4], 0 + 4 * 0.75f);
  EXPECT_FLOAT_EQ(o[5], 2.f);
  test::expect_views_near(ids.view(), ids0.view(), {0, 0}, "ids");
  test::expect_views_near(w.view(), w0.view(), {0, 0}, "weights");
  test::expect_views_near(table.view(), table0.view(), {0, 0}, "table");
}

TEST(WeightedEmbeddingAdd, RowStridedViews) {
  // out and table as the first columns of wider buffers: the padding stays.
  Tensor out_buf = host_tensor({2, 4}, DType::f32, {1, 2, 99, 99, /**/ 3, 4, 99, 99});
  Tensor table_buf = host_tensor({3, 3}, DType::f32, {1, 1, 7, /**/ 2, 2, 7, /**/ 3, 3, 7});
  TensorView out = out_buf.view(), table = table_buf.view();
  out.shape[1] = 2;
  table.shape[1] = 2;
  const Tensor ids = host_tensor({2, 2}, DType::i64, {0, 2, 1, 1});
  const Tensor w = host_tensor({2, 2}, DType::f32, {1, 2, 0.5, 0.5});
  expect_ok(DeviceType::cpu, WeightedEmbeddingAddArgs{out, ids, w, table});
  const float* o = out_buf.data_as<float>();
  EXPECT_FLOAT_EQ(o[0], 1 + 1 + 6);
  EXPECT_FLOAT_EQ(o[1], 2 + 1 + 6);
  EXPECT_FLOAT_EQ(o[2], 99.f);
  EXPECT_FLOAT_EQ(o[4], 3 + 2);
  EXPECT_FLOAT_EQ(o[5], 4 + 2);
  EXPECT_FLOAT_EQ(o[7], 99.f);
}

TEST(WeightedEmbeddingAdd, NamedErrors) {
  const Tensor table = Tensor::zeros({4, 3}, DType::f32);
  const Tensor ids = Tensor::zeros({2, 4}, DType::i32), w = Tensor::zeros({2, 4}, DType::f32);
  Tensor out = Tensor::zeros({2, 3}, DType::f32);
  expect_ok(DeviceType::cpu, WeightedEmbeddingAddArgs{out, ids, w, table});
  expect_invalid(DeviceType::cpu, WeightedEmbeddingAddArgs{out, ids, Tensor::zeros({2, 3}, DType::f32), table},
                 "weights must be [2, 4]");
  expect_invalid(DeviceType::cpu, WeightedEmbeddingAddArgs{out, ids, Tensor::zeros({2, 4}, DType::bf16), table},
                 "weights");
  expect_invalid(DeviceType::cpu, WeightedEmbeddingAddArgs{Tensor::zeros({3, 3}, DType::f32), ids, w, table},
                 "out must be [2, 3]");
  expect_invalid(DeviceType::cpu,
                 WeightedEmbeddingAddArgs{out, Tensor::zeros({2, 17}, DType::i32), Tensor::zeros({2, 17}, DType::f32),
                                          table},
                 "1 to 16 taps");
  expect_invalid(DeviceType::cpu, WeightedEmbeddingAddArgs{Tensor::zeros({2, 3}, DType::f16), ids, w, table}, "out");
  Tensor bad_ids = Tensor::zeros({2, 4}, DType::i32);
  bad_ids.data_as<int32_t>()[6] = 4;
  Tensor o2 = host_tensor({2, 3}, DType::f32, {1, 2, 3, 4, 5, 6});
  expect_invalid(DeviceType::cpu, WeightedEmbeddingAddArgs{o2, bad_ids, host_tensor({2, 4}, DType::f32, {1, 1, 1, 1, 1, 1, 1, 1}), table},
                 "ids[1, 2] = 4 is out of range");
  EXPECT_FLOAT_EQ(o2.data_as<float>()[0], 1.f) << "an error leaves out untouched";
}

}  // namespace
}  // namespace fk
