// transpose_tokens beyond the generic oracle test (which runs every test workload, and their
// batch-strided views, against the f64 oracle): a hand-computed case, exact bits (NaN
// payloads, -0, denormals) through the engine-dtype path, the f64 path the oracle takes,
// random and edge shapes (one frame, one position, one channel, odd channels), input views
// with free strides (a channel slice of a packed qkv, a permuted view, a broadcast frame),
// a round trip, the definition's workloads, and errors that name the wrong field.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "fk/element.h"
#include "fk/ops/dit.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::TransposeTokensArgs;
using test::expect_invalid;
using test::expect_ok;

// A [s0, s1, s2, s3] view with the given element strides, `offset` elements into `buffer`.
TensorView view4(const Tensor& buffer, std::initializer_list<int64_t> shape, std::initializer_list<int64_t> strides,
                 int64_t offset = 0) {
  TensorView v = buffer.view();
  v.data = v.element_ptr(offset);
  v.rank = 4;
  int i = 0;
  for (int64_t s : shape) v.shape[i++] = s;
  i = 0;
  for (int64_t s : strides) v.strides[i++] = s;
  return v;
}

// out[b, y, x, c] holds input[b, x, y, c]: the same bytes when the dtypes agree, the same
// value when out is f64 (the oracle's copy).
void expect_transposed(const TensorView& out, const TensorView& in, const std::string& what) {
  ASSERT_EQ(out.rank, 4) << what;
  int64_t bad = 0;
  for (int64_t b = 0; b < in.shape[0]; ++b)
    for (int64_t x = 0; x < in.shape[1]; ++x)
      for (int64_t y = 0; y < in.shape[2]; ++y)
        for (int64_t c = 0; c < in.shape[3]; ++c) {
          const void* o = out.element_ptr(element_offset(out, b, y, x, c));
          const void* i = in.element_ptr(element_offset(in, b, x, y, c));
          const bool same = out.dtype == in.dtype ? std::memcmp(o, i, static_cast<size_t>(in.element_size())) == 0
                                                  : load_element(o, out.dtype) == load_element(i, in.dtype);
          if (!same && bad++ < 5)
            ADD_FAILURE() << what << ": out[" << b << ", " << y << ", " << x << ", " << c << "] = "
                          << load_element(o, out.dtype) << ", input[" << b << ", " << x << ", " << y << ", " << c
                          << "] = " << load_element(i, in.dtype);
        }
  EXPECT_EQ(bad, 0) << what;
}

TEST(TransposeTokens, HandComputedSmallCase) {
  // input[0, x, y, c] = 100 x + 10 y + c, two frames of three positions of two channels.
  Tensor in = Tensor::empty({1, 2, 3, 2}, DType::f32);
  for (int x = 0; x < 2; ++x)
    for (int y = 0; y < 3; ++y)
      for (int c = 0; c < 2; ++c) set(in.view(), 100.0 * x + 10.0 * y + c, 0, x, y, c);
  Tensor out = Tensor::empty({1, 3, 2, 2}, DType::f32);
  expect_ok(DeviceType::cpu, TransposeTokensArgs{out, in});
  // Position-major: each position's two frames are consecutive tokens.
  const float want[12] = {0, 1, 100, 101, /**/ 10, 11, 110, 111, /**/ 20, 21, 120, 121};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(out.data_as<float>()[i], want[i]) << i;
}

TEST(TransposeTokens, CopiesBitsExactly) {
  // A copy must not round or canonicalise: a NaN with a payload, -0, a bf16 denormal, the
  // largest finite value and an infinity come out with the same bits.
  const uint16_t bits[] = {0x7fc1, 0xffa5, 0x8000, 0x0001, 0x7f7f, 0xff80, 0x3f80, 0x8001};
  Tensor in = Tensor::empty({1, 2, 2, 2}, DType::bf16);
  std::memcpy(in.data(), bits, sizeof(bits));
  Tensor out = Tensor::empty({1, 2, 2, 2}, DType::bf16);
  expect_ok(DeviceType::cpu, TransposeTokensArgs{out, in});
  expect_transposed(out.view(), in.view(), "special values");
  const uint16_t* o = out.data_as<uint16_t>();
  EXPECT_EQ(o[0], 0x7fc1);  // out[y 0, x 0, c 0] = in[x 0, y 0, c 0]
  EXPECT_EQ(o[2], 0x7f7f);  // out[y 0, x 1, c 0] = in[x 1, y 0, c 0]
  EXPECT_EQ(o[4], 0x8000);  // out[y 1, x 0, c 0] = in[x 0, y 1, c 0]
}

TEST(TransposeTokens, RandomAndEdgeShapesEveryDtype) {
  struct Shape4 {
    int64_t b, x, y, c;
  };
  const Shape4 shapes[] = {{2, 3, 5, 16}, {1, 1, 7, 24},  {2, 6, 1, 8}, {3, 4, 5, 1}, {1, 5, 3, 13},
                           {1, 16, 9, 3}, {1, 2, 3, 3072}, {0, 4, 4, 8}, {1, 3, 0, 8}, {2, 1, 1, 1}};
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (const Shape4& s : shapes) {
      const std::string what = std::string(dtype_name(dt)) + " [" + std::to_string(s.b) + ", " + std::to_string(s.x) +
                               ", " + std::to_string(s.y) + ", " + std::to_string(s.c) + "]";
      const uint64_t seed = test::seed_for("transpose_tokens " + what);
      const Tensor in = ops::random_tensor({s.b, s.x, s.y, s.c}, dt, seed, 1, -4.f, 4.f);
      const Tensor before = in.clone();
      Tensor out = Tensor::empty({s.b, s.y, s.x, s.c}, dt);
      expect_ok(DeviceType::cpu, TransposeTokensArgs{out, in});
      expect_transposed(out.view(), in.view(), what);
      EXPECT_EQ(std::memcmp(in.data(), before.data(), in.nbytes()), 0) << what << ": input changed";
      // The oracle's path: the same values into f64.
      Tensor out64 = Tensor::empty({s.b, s.y, s.x, s.c}, DType::f64);
      expect_ok(DeviceType::cpu, TransposeTokensArgs{out64, in});
      expect_transposed(out64.view(), in.view(), what + " into f64");
      // With one frame (or one position) the order does not change: out is input's bytes.
      if (s.x == 1 || s.y == 1) EXPECT_EQ(std::memcmp(out.data(), in.data(), in.nbytes()), 0) << what;
    }
}

TEST(TransposeTokens, RoundTripRestoresTheInput) {
  const Tensor in = ops::random_tensor({2, 4, 6, 10}, DType::bf16, test::seed_for("transpose_tokens_round_trip"), 1);
  Tensor mid = Tensor::empty({2, 6, 4, 10}, DType::bf16), back = Tensor::empty({2, 4, 6, 10}, DType::bf16);
  expect_ok(DeviceType::cpu, TransposeTokensArgs{mid, in});
  expect_ok(DeviceType::cpu, TransposeTokensArgs{back, mid});
  EXPECT_EQ(std::memcmp(back.data(), in.data(), in.nbytes()), 0);
}

TEST(TransposeTokens, StridedInputViews) {
  const uint64_t seed = test::seed_for("transpose_tokens_strided");
  const int64_t B = 2, X = 3, Y = 5, C = 8;
  // k of a packed qkv [B, X, Y, 3C]: channels [C, 2C) of each token, token stride 3C.
  const Tensor qkv = ops::random_tensor({B, X, Y, 3 * C}, DType::f16, seed, 1);
  const TensorView k = view4(qkv, {B, X, Y, C}, {X * Y * 3 * C, Y * 3 * C, 3 * C, 1}, C);
  Tensor out = Tensor::empty({B, Y, X, C}, DType::f16);
  expect_ok(DeviceType::cpu, TransposeTokensArgs{out, k});
  expect_transposed(out.view(), k, "k slice of qkv");

  // A permuted view: input [B, X, Y, C] read from a position-major buffer [B, Y, X, C], so
  // the transpose gives that buffer back.
  const Tensor pm = ops::random_tensor({B, Y, X, C}, DType::bf16, seed, 2);
  const TensorView frame_major = view4(pm, {B, X, Y, C}, {Y * X * C, C, X * C, 1});
  Tensor back = Tensor::empty({B, Y, X, C}, DType::bf16);
  expect_ok(DeviceType::cpu, TransposeTokensArgs{back, frame_major});
  EXPECT_EQ(std::memcmp(back.data(), pm.data(), pm.nbytes()), 0) << "permuted view";

  // One frame broadcast over X frames (frame stride 0), odd channel count, batch stride
  // padded: every output position repeats the frame's token X times.
  const Tensor frame = ops::random_tensor({B, 1, Y, 2 * 5 + 3}, DType::f32, seed, 3);
  const TensorView broadcast = view4(frame, {B, X, Y, 5}, {Y * 13, 0, 13, 1}, 2);
  Tensor rep = Tensor::empty({B, Y, X, 5}, DType::f32);
  expect_ok(DeviceType::cpu, TransposeTokensArgs{rep, broadcast});
  expect_transposed(rep.view(), broadcast, "broadcast frame");
}

TEST(TransposeTokens, DefinitionWorkloadsAndCost) {
  const OpDef& def = OpRegistry::global().def(TransposeTokensArgs::kName);
  EXPECT_EQ(def.family, "dit");
  EXPECT_EQ(def.level, "L1");
  // Oasis-500m: 144 positions a frame, hidden 1024 and its qkv, 1 to 32 frames, bf16.
  bool oasis_qkv_32 = false;
  for (const Json& w : def.bench_workloads)
    oasis_qkv_32 |= ops::wl_int(w, "x") == 32 && ops::wl_int(w, "y") == 144 && ops::wl_int(w, "channels") == 3072 &&
                    ops::wl_dtype(w) == DType::bf16;
  EXPECT_TRUE(oasis_qkv_32);
  const Json w = {{"batch", 2}, {"x", 3}, {"y", 5}, {"channels", 12}, {"dtype", "f16"}};
  const OpCase c = def.make_case(w, test::seed_for("transpose_tokens_def"));
  const auto& a = c.as<TransposeTokensArgs>();
  EXPECT_EQ(a.input.shape[1], 3);
  EXPECT_EQ(a.out.shape[1], 5);
  EXPECT_EQ(def.cost(c).bytes, 2.0 * 2 * 3 * 5 * 12 * 2);
  EXPECT_EQ(def.cost(c).flops, 0.0);
  EXPECT_EQ(def.workload_from_call(c.args_ptr()), w);
  const Tolerance tol = def.tolerance(c, def.tensor_args[0], DType::f16);
  EXPECT_EQ(tol.atol, 0.0);
  EXPECT_EQ(tol.rtol, 0.0);
  try {
    def.make_case(Json{{"x", 3}, {"y", 5}}, 1);
    ADD_FAILURE() << "a workload without channels was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("channels"), std::string::npos) << e.what();
  }
}

TEST(TransposeTokens, NamedErrors) {
  const Tensor in = Tensor::empty({1, 2, 3, 4}, DType::bf16);
  Tensor out = Tensor::empty({1, 3, 2, 4}, DType::bf16);
  const Tensor rank3 = Tensor::empty({2, 3, 4}, DType::bf16);
  expect_invalid(DeviceType::cpu, TransposeTokensArgs{out, rank3}, "input must have rank 4");
  expect_invalid(DeviceType::cpu, TransposeTokensArgs{rank3, in}, "out must have rank 4");
  const Tensor ints = Tensor::empty({1, 2, 3, 4}, DType::i32);
  expect_invalid(DeviceType::cpu, TransposeTokensArgs{out, ints}, "input must be one of f32/f16/bf16");
  // Not transposed, and the wrong channel count.
  const Tensor same = Tensor::empty({1, 2, 3, 4}, DType::bf16), narrow = Tensor::empty({1, 3, 2, 3}, DType::bf16);
  expect_invalid(DeviceType::cpu, TransposeTokensArgs{same, in}, "out must be [B, Y, X, C] = [1, 3, 2, 4]");
  expect_invalid(DeviceType::cpu, TransposeTokensArgs{narrow, in}, "out must be [B, Y, X, C]");
  const Tensor half = Tensor::empty({1, 3, 2, 4}, DType::f16);
  expect_invalid(DeviceType::cpu, TransposeTokensArgs{half, in}, "out must be bf16");
  // Channels not contiguous: every other element of a wider buffer.
  const Tensor wide = Tensor::empty({1, 2, 3, 8}, DType::bf16);
  expect_invalid(DeviceType::cpu, TransposeTokensArgs{out, view4(wide, {1, 2, 3, 4}, {48, 24, 8, 2})},
                 "input [B, X, Y, C] must have a contiguous channel dimension");
  // A negative stride (a reversed view) is refused rather than mis-measured for overlap.
  expect_invalid(DeviceType::cpu, TransposeTokensArgs{out, view4(wide, {1, 2, 3, 4}, {48, -24, 8, 1}, 24)},
                 "input strides must be non-negative");
  // out must be packed: a channel slice of a wider buffer is refused.
  Tensor wide_out = Tensor::empty({1, 3, 2, 8}, DType::bf16);
  expect_invalid(DeviceType::cpu, TransposeTokensArgs{view4(wide_out, {1, 3, 2, 4}, {48, 16, 8, 1}), in},
                 "out must be contiguous");
  // out over the input's own bytes.
  Tensor buf = Tensor::empty({1, 2, 3, 4}, DType::bf16);
  expect_invalid(DeviceType::cpu, TransposeTokensArgs{view4(buf, {1, 3, 2, 4}, {24, 8, 4, 1}), buf},
                 "out must not overlap input");
  // Tensors must live on the backend that runs (a view that claims a GPU is not read).
  TensorView on_gpu = in.view();
  on_gpu.device = Device::cuda();
  expect_invalid(DeviceType::cpu, TransposeTokensArgs{out, on_gpu}, "input must be on cpu");
}

}  // namespace
}  // namespace fk
