// embedding beyond the generic oracle test: known rows, out-of-range ids as a clear error
// that writes nothing (CPU), strided rows, and clear errors for bad arguments.
#include <gtest/gtest.h>

#include "fk/ops/embedding.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"

namespace fk {
namespace {

using ops::EmbeddingArgs;
using test::expect_invalid;
using test::expect_ok;

Tensor table_4x3() {  // row v = {10v, 10v + 1, 10v + 2}
  Tensor t = Tensor::empty({4, 3}, DType::f32);
  for (int v = 0; v < 4; ++v)
    for (int h = 0; h < 3; ++h) t.data_as<float>()[v * 3 + h] = static_cast<float>(10 * v + h);
  return t;
}

template <class I>
Tensor ids_of(DType dt, std::initializer_list<I> values) {
  Tensor t = Tensor::empty({static_cast<int64_t>(values.size())}, dt);
  size_t i = 0;
  for (I v : values) t.data_as<I>()[i++] = v;
  return t;
}

TEST(Embedding, GathersRows) {
  Tensor table = table_4x3(), out = Tensor::empty({3, 3}, DType::f32);
  for (DType dt : {DType::i32, DType::i64}) {
    Tensor ids = dt == DType::i32 ? ids_of<int32_t>(dt, {2, 0, 3}) : ids_of<int64_t>(dt, {2, 0, 3});
    expect_ok(DeviceType::cpu, EmbeddingArgs{out, ids, table});
    const int expect_rows[3] = {2, 0, 3};
    for (int t = 0; t < 3; ++t)
      for (int h = 0; h < 3; ++h) EXPECT_EQ(out.data_as<float>()[t * 3 + h], 10 * expect_rows[t] + h);
  }
}

TEST(Embedding, OutOfRangeIdIsAClearErrorAndWritesNothing) {
  Tensor table = table_4x3();
  Tensor out = Tensor::empty({3, 3}, DType::f32);
  for (int i = 0; i < 9; ++i) out.data_as<float>()[i] = -7.f;
  expect_invalid(DeviceType::cpu, EmbeddingArgs{out, ids_of<int32_t>(DType::i32, {1, 4, 0}), table},
                 "ids[1] = 4 is out of range for a table of 4 rows");
  expect_invalid(DeviceType::cpu, EmbeddingArgs{out, ids_of<int32_t>(DType::i32, {1, 2, -1}), table},
                 "ids[2] = -1 is out of range");
  expect_invalid(DeviceType::cpu, EmbeddingArgs{out, ids_of<int64_t>(DType::i64, {int64_t{1} << 40, 0, 0}), table},
                 "ids[0] = 1099511627776 is out of range");
  for (int i = 0; i < 9; ++i) EXPECT_EQ(out.data_as<float>()[i], -7.f) << "out written before the error";
}

TEST(Embedding, StridedRows) {
  const int64_t V = 6, H = 10, T = 4;
  auto table = test::make_strided(V, H, H + 6, 2, DType::bf16, 3, 1, -1.f, 1.f);
  auto out = test::make_strided(T, H, H + 1, 1, DType::bf16, 3, 2, 0.f, 1.f);
  Tensor ids = ids_of<int32_t>(DType::i32, {5, 0, 5, 2});
  expect_ok(DeviceType::cpu, EmbeddingArgs{out.view, ids, table.view});
  const int rows[4] = {5, 0, 5, 2};
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h) EXPECT_EQ(get(out.view, t, h), get(table.view, rows[t], h));
}

TEST(Embedding, ZeroTokens) {
  Tensor table = table_4x3(), out = Tensor::empty({0, 3}, DType::f32), ids = Tensor::empty({0}, DType::i32);
  expect_ok(DeviceType::cpu, EmbeddingArgs{out, ids, table});
}

TEST(EmbeddingErrors, BadArgumentsAreClearErrors) {
  const auto cpu = DeviceType::cpu;
  Tensor table = table_4x3(), out = Tensor::empty({2, 3}, DType::f32);
  Tensor ids = ids_of<int32_t>(DType::i32, {0, 1});
  expect_ok(cpu, EmbeddingArgs{out, ids, table});
  expect_invalid(cpu, EmbeddingArgs{Tensor::empty({3, 3}, DType::f32), ids, table}, "out must be [2, 3]");
  expect_invalid(cpu, EmbeddingArgs{Tensor::empty({2, 4}, DType::f32), ids, table}, "out must be [2, 3]");
  expect_invalid(cpu, EmbeddingArgs{Tensor::empty({2, 3}, DType::bf16), ids, table}, "out must be f32");
  expect_invalid(cpu, EmbeddingArgs{out, Tensor::zeros({2}, DType::f32), table}, "ids must be one of i32/i64");
  expect_invalid(cpu, EmbeddingArgs{out, Tensor::zeros({2, 1}, DType::i32), table}, "ids must have rank 1");
  expect_invalid(cpu, EmbeddingArgs{out, ids, Tensor::zeros({12}, DType::f32)}, "table must have rank 2");
  expect_invalid(cpu, EmbeddingArgs{Tensor::empty({2, 3}, DType::i8), ids, Tensor::zeros({4, 3}, DType::i8)},
                 "table must be one of f32/f16/bf16");
  TensorView ids_strided = Tensor::zeros({4}, DType::i32).view();
  ids_strided.shape[0] = 2, ids_strided.strides[0] = 2;
  expect_invalid(cpu, EmbeddingArgs{out, ids_strided, table}, "ids must be contiguous");
  TensorView out_in_table = table.view();
  out_in_table.shape[0] = 2;
  expect_invalid(cpu, EmbeddingArgs{out_in_table, ids, table}, "out must not overlap table");
}

TEST(EmbeddingErrors, CudaImplementationRejectsHostTensors) {
  if (!OpRegistry::global().baseline(EmbeddingArgs::kName, DeviceType::cuda)) GTEST_SKIP() << "CPU-only build";
  Tensor table = table_4x3(), out = Tensor::empty({2, 3}, DType::f32);
  expect_invalid(DeviceType::cuda, EmbeddingArgs{out, ids_of<int32_t>(DType::i32, {0, 1}), table},
                 "table must be on cuda");
}

}  // namespace
}  // namespace fk
