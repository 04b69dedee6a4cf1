// attention_sink_rescale beyond the generic oracle test: the rescale of an attention row
// equals a softmax whose denominator includes the sink (transformers' GptOssAttention:
// the sink appended as one more logit and dropped after the softmax), computed here from
// scores and values directly; a row without keys stays zero; a row-strided output (the
// heads of a wider buffer) keeps its padding; named errors (CPU implementation).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "fk/element.h"
#include "fk/ops/attention_sink.h"
#include "fk/random.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::AttentionSinkRescaleArgs;
using test::expect_invalid;
using test::expect_ok;

TEST(AttentionSinkRescale, EqualsSoftmaxWithTheSinkInTheDenominator) {
  const uint64_t seed = test::seed_for("attention_sink_rescale");
  const int64_t T = 5, H = 3, D = 8, keys = 11;
  const Tensor scores = Tensor::empty({T, H, keys}, DType::f64), values = Tensor::empty({keys, D}, DType::f64);
  fill_uniform(scores.view(), seed, 1ull << 40, -6.f, 6.f);
  fill_uniform(values.view(), seed, 2ull << 40, -2.f, 2.f);
  Tensor sinks = Tensor::empty({H}, DType::f32);
  fill_uniform(sinks.view(), seed, 3ull << 40, -3.f, 8.f);
  Tensor out = Tensor::empty({T, H, D}, DType::f32), lse = Tensor::empty({T, H}, DType::f32);
  std::vector<double> want(static_cast<size_t>(T * H * D));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      // Attention without the sink, as the attention ops return it: out and base-2 lse.
      double sum = 0, with_sink = std::exp(get(sinks.view(), h));
      for (int64_t j = 0; j < keys; ++j) sum += std::exp(get(scores.view(), t, h, j));
      with_sink += sum;
      set(lse.view(), std::log2(sum), t, h);
      for (int64_t d = 0; d < D; ++d) {
        double o = 0, o_sink = 0;
        for (int64_t j = 0; j < keys; ++j) {
          const double p = std::exp(get(scores.view(), t, h, j));
          o += p / sum * get(values.view(), j, d);
          o_sink += p / with_sink * get(values.view(), j, d);
        }
        set(out.view(), o, t, h, d);
        want[static_cast<size_t>((t * H + h) * D + d)] = o_sink;
      }
    }
  expect_ok(DeviceType::cpu, AttentionSinkRescaleArgs{out, lse, sinks});
  for (int64_t i = 0; i < T * H * D; ++i)
    EXPECT_NEAR(out.data_as<float>()[i], want[static_cast<size_t>(i)], 2e-6 + 2e-6 * std::abs(want[static_cast<size_t>(i)]))
        << i;
}

TEST(AttentionSinkRescale, RowWithoutKeysStaysZeroAndHugeSinksSilenceTheRow) {
  Tensor out = Tensor::empty({2, 2, 4}, DType::bf16), lse = Tensor::empty({2, 2}, DType::f32);
  for (int64_t i = 0; i < 16; ++i) store_element(static_cast<char*>(out.data()) + 2 * i, DType::bf16, i < 4 ? 0.0 : 1.5);
  const float inf = std::numeric_limits<float>::infinity();
  lse.data_as<float>()[0] = -inf;  // token 0, head 0: no key visible, the output is zero
  lse.data_as<float>()[1] = 3.f;
  lse.data_as<float>()[2] = 3.f;
  lse.data_as<float>()[3] = 3.f;
  Tensor sinks = Tensor::empty({2}, DType::f32);
  sinks.data_as<float>()[0] = 0.f;
  sinks.data_as<float>()[1] = 1000.f;  // head 1: the sink takes all the probability
  expect_ok(DeviceType::cpu, AttentionSinkRescaleArgs{out, lse, sinks});
  auto at = [&](int64_t t, int64_t h, int64_t d) { return get(out.view(), t, h, d); };
  for (int64_t d = 0; d < 4; ++d) {
    EXPECT_EQ(at(0, 0, d), 0.0);
    EXPECT_EQ(at(0, 1, d), 0.0);
    EXPECT_EQ(at(1, 1, d), 0.0);
    // 2^3 = 8 = sum exp(s); with exp(0) = 1 beside it the row keeps 8/9 of its value.
    EXPECT_NEAR(at(1, 0, d), 1.5 * 8.0 / 9.0, 1e-2);
  }
}

TEST(AttentionSinkRescale, RowStridedOutputKeepsItsPadding) {
  const int64_t T = 3, H = 2, D = 4, stride = H * D + 5;
  Tensor storage = Tensor::empty({T * stride}, DType::f32);
  for (int64_t i = 0; i < T * stride; ++i) storage.data_as<float>()[i] = 2.f;
  TensorView out = storage.view();
  out.rank = 3;
  out.shape[0] = T;
  out.shape[1] = H;
  out.shape[2] = D;
  out.strides[0] = stride;
  out.strides[1] = D;
  out.strides[2] = 1;
  Tensor lse = Tensor::empty({T, H}, DType::f32), sinks = Tensor::empty({H}, DType::f32);
  for (int64_t i = 0; i < T * H; ++i) lse.data_as<float>()[i] = 0.f;  // sum exp = 1
  sinks.data_as<float>()[0] = sinks.data_as<float>()[1] = 0.f;          // the sink counts as much
  expect_ok(DeviceType::cpu, AttentionSinkRescaleArgs{out, lse, sinks});
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < stride; ++c)
      EXPECT_FLOAT_EQ(storage.data_as<float>()[t * stride + c], c < H * D ? 1.f : 2.f) << t << " " << c;
}

TEST(AttentionSinkRescale, NamedErrors) {
  Tensor out = Tensor::empty({3, 4, 8}, DType::bf16), lse = Tensor::empty({3, 4}, DType::f32);
  Tensor sinks = Tensor::empty({4}, DType::f32);
  expect_invalid(DeviceType::cpu, AttentionSinkRescaleArgs{out, lse, Tensor::empty({5}, DType::f32)}, "sinks must be f32[4]");
  expect_invalid(DeviceType::cpu, AttentionSinkRescaleArgs{out, lse, Tensor::empty({4}, DType::bf16)}, "sinks must be f32");
  expect_invalid(DeviceType::cpu, AttentionSinkRescaleArgs{out, Tensor::empty({3, 5}, DType::f32), sinks}, "lse must be f32[3, 4]");
  expect_invalid(DeviceType::cpu, AttentionSinkRescaleArgs{out, Tensor::empty({3, 4}, DType::bf16), sinks}, "lse must be f32");
  expect_invalid(DeviceType::cpu, AttentionSinkRescaleArgs{Tensor::empty({3, 32}, DType::bf16), lse, sinks}, "out must have rank 3");
  expect_invalid(DeviceType::cpu, AttentionSinkRescaleArgs{Tensor::empty({3, 4, 8}, DType::i32), lse, sinks}, "out must be f32/f16/bf16");
}

}  // namespace
}  // namespace fk
