// causal_conv1d and causal_conv1d_update beyond the generic oracle test: known values
// (the taps' order, the state's order, a short sequence shifting the state), what users of
// the recurrent state rely on (a chunked prefill equals one whole pass; N single-token
// updates equal one prefill of the same N tokens; several tokens per update equal one by
// one; packed sequences never see each other), padding sequences, the token-major slot
// layout, and clear errors for bad arguments (CPU implementation; the CUDA one where its
// validation runs first).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fk/element.h"
#include "fk/philox.h"
#include "fk/ops/ssm_conv.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::CausalConv1dArgs;
using ops::CausalConv1dUpdateArgs;
using test::expect_invalid;
using test::expect_ok;

Tensor i32s(std::initializer_list<int32_t> v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::i32);
  std::copy(v.begin(), v.end(), t.data_as<int32_t>());
  return t;
}
Tensor bools(std::initializer_list<int> v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::boolean);
  size_t i = 0;
  for (int b : v) t.data_as<uint8_t>()[i++] = static_cast<uint8_t>(b);
  return t;
}
Tensor f32s(const Shape& shape, std::initializer_list<float> v) {
  Tensor t = Tensor::empty(shape, DType::f32);
  std::copy(v.begin(), v.end(), t.data_as<float>());
  return t;
}
Tensor uniform(const Shape& shape, DType dt, uint64_t seed, uint64_t stream, float lo = -2.f, float hi = 2.f) {
  return ops::random_tensor(shape, dt, seed, stream, lo, hi);
}

// Rows [begin, end) of a [T, D] tensor as a view.
TensorView rows(const Tensor& t, int64_t begin, int64_t end) {
  TensorView v = t.view();
  v.data = v.element_ptr(begin * v.strides[0]);
  v.shape[0] = end - begin;
  return v;
}

// Two host tensors of one shape and dtype, element by element, exactly.
void expect_same(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.numel(), b.numel()) << what;
  int64_t bad = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = load_element(a.view().element_ptr(i), a.dtype()), y = load_element(b.view().element_ptr(i), b.dtype());
    if (x != y && bad++ < 5) ADD_FAILURE() << what << ": element " << i << " = " << x << ", expected " << y;
  }
  EXPECT_EQ(bad, 0) << what;
}

double silu(double u) { return u / (1.0 + std::exp(-u)); }

// One channel, W = 4, weight [1, 10, 100, 1000]: out[t] = x[t-3] + 10 x[t-2] + 100 x[t-1]
// + 1000 x[t], so each digit shows which input a tap saw. The state (oldest first) is
// [1, 2, 3]; the sequence x = [4, 5, 6, 7, 8].
TEST(CausalConv1d, TapsAndStateInOrder) {
  const Tensor weight = f32s({1, 4}, {1, 10, 100, 1000});
  for (int from_state : {1, 0}) {
    Tensor state = f32s({1, 1, 3}, {1, 2, 3});
    const Tensor x = f32s({5, 1}, {4, 5, 6, 7, 8});
    Tensor out = Tensor::empty({5, 1}, DType::f32);
    expect_ok(DeviceType::cpu, CausalConv1dArgs{out, x, weight, {}, state, i32s({0, 5}), i32s({0}), bools({from_state}), 0});
    const float* o = out.data_as<float>();
    if (from_state) {
      EXPECT_EQ(o[0], 1 + 20 + 300 + 4000);
      EXPECT_EQ(o[1], 2 + 30 + 400 + 5000);
      EXPECT_EQ(o[2], 3 + 40 + 500 + 6000);
    } else {
      EXPECT_EQ(o[0], 4000);
      EXPECT_EQ(o[1], 400 + 5000);
      EXPECT_EQ(o[2], 40 + 500 + 6000);
    }
    EXPECT_EQ(o[3], 4 + 50 + 600 + 7000);
    EXPECT_EQ(o[4], 5 + 60 + 700 + 8000);
    // The slot holds the last three inputs, oldest first, whatever it started from.
    EXPECT_EQ(state.data_as<float>()[0], 6);
    EXPECT_EQ(state.data_as<float>()[1], 7);
    EXPECT_EQ(state.data_as<float>()[2], 8);
  }
}

// A sequence shorter than W - 1 keeps the newest inputs of its initial state (or zeros).
TEST(CausalConv1d, ShortSequenceShiftsTheState) {
  const Tensor weight = f32s({1, 4}, {1, 10, 100, 1000});
  for (int from_state : {1, 0}) {
    Tensor state = f32s({1, 1, 3}, {1, 2, 3});
    const Tensor x = f32s({1, 1}, {4});
    Tensor out = Tensor::empty({1, 1}, DType::f32);
    expect_ok(DeviceType::cpu, CausalConv1dArgs{out, x, weight, {}, state, i32s({0, 1}), i32s({0}), bools({from_state}), 0});
    EXPECT_EQ(out.data_as<float>()[0], from_state ? 1 + 20 + 300 + 4000 : 4000);
    EXPECT_EQ(state.data_as<float>()[0], from_state ? 2 : 0);
    EXPECT_EQ(state.data_as<float>()[1], from_state ? 3 : 0);
    EXPECT_EQ(state.data_as<float>()[2], 4);
  }
  // An empty sequence: its state stays (continued) or becomes zeros (fresh).
  for (int from_state : {1, 0}) {
    Tensor state = f32s({1, 1, 3}, {1, 2, 3});
    expect_ok(DeviceType::cpu, CausalConv1dArgs{Tensor::empty({0, 1}, DType::f32), Tensor::empty({0, 1}, DType::f32),
                                                weight, {}, state, i32s({0, 0}), i32s({0}), bools({from_state}), 0});
    for (int j = 0; j < 3; ++j) EXPECT_EQ(state.data_as<float>()[j], from_state ? j + 1 : 0);
  }
}

TEST(CausalConv1d, BiasAndSilu) {
  const Tensor weight = f32s({2, 2}, {0.5f, -1.f, 2.f, 1.f});
  const Tensor bias = f32s({2}, {0.25f, -3.f});
  Tensor state = f32s({1, 2, 1}, {1.f, -1.f});
  const Tensor x = f32s({2, 2}, {2.f, 0.5f, -1.f, 4.f});
  Tensor out = Tensor::empty({2, 2}, DType::f32);
  expect_ok(DeviceType::cpu, CausalConv1dArgs{out, x, weight, bias, state, i32s({0, 2}), i32s({0}), bools({1}), 1});
  const float* o = out.data_as<float>();
  EXPECT_NEAR(o[0], silu(0.25 + 0.5 * 1 - 1 * 2), 1e-6);
  EXPECT_NEAR(o[1], silu(-3 + 2 * -1 + 1 * 0.5), 1e-6);
  EXPECT_NEAR(o[2], silu(0.25 + 0.5 * 2 - 1 * -1), 1e-6);
  EXPECT_NEAR(o[3], silu(-3 + 2 * 0.5 + 1 * 4), 1e-6);
}

struct Batch {
  std::vector<int64_t> lens;
  int64_t D, W;
  DType dt;
};

// A chunked prefill equals one whole pass: each sequence split at random points, the later
// chunks continuing from the state, gives bit-identical outputs and final states.
TEST(CausalConv1d, ChunkedPrefillEqualsWholePass) {
  const uint64_t seed = test::seed_for("causal_conv1d_chunked");
  for (const Batch& bt : {Batch{{19, 1, 7, 40}, 24, 4, DType::bf16}, Batch{{2, 11}, 16, 3, DType::f32},
                          Batch{{9, 5}, 8, 2, DType::f16}}) {
    const int64_t B = static_cast<int64_t>(bt.lens.size()), D = bt.D, W = bt.W;
    int64_t T = 0;
    for (int64_t L : bt.lens) T += L;
    const Tensor x = uniform({T, D}, bt.dt, seed, 1), weight = uniform({D, W}, bt.dt, seed, 2, -1.f, 1.f),
                 bias = uniform({D}, bt.dt, seed, 3, -0.5f, 0.5f);
    const Tensor state0 = uniform({B + 1, D, W - 1}, bt.dt, seed, 4);
    std::vector<int32_t> slots(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) slots[static_cast<size_t>(b)] = static_cast<int32_t>(B - b);  // reversed
    // Whole: every sequence continues from its slot.
    Tensor whole_state = state0.clone(), whole_out = Tensor::empty({T, D}, bt.dt);
    std::vector<int32_t> cu{0};
    for (int64_t L : bt.lens) cu.push_back(static_cast<int32_t>(cu.back() + L));
    Tensor cu_t = Tensor::empty({B + 1}, DType::i32), slot_t = Tensor::empty({B}, DType::i32),
           init_t = Tensor::empty({B}, DType::boolean);
    std::copy(cu.begin(), cu.end(), cu_t.data_as<int32_t>());
    std::copy(slots.begin(), slots.end(), slot_t.data_as<int32_t>());
    std::fill_n(init_t.data_as<uint8_t>(), B, uint8_t{1});
    expect_ok(DeviceType::cpu, CausalConv1dArgs{whole_out, x, weight, bias, whole_state, cu_t, slot_t, init_t, 1});
    // Chunked: sequence by sequence, each in pieces of random length (1 to 8 tokens).
    Tensor chunk_state = state0.clone(), chunk_out = Tensor::empty({T, D}, bt.dt);
    for (int64_t b = 0; b < B; ++b) {
      int64_t t = cu[static_cast<size_t>(b)], piece = 0;
      while (t < cu[static_cast<size_t>(b) + 1]) {
        const int64_t len = std::min<int64_t>(cu[static_cast<size_t>(b) + 1] - t,
                                              1 + philox_int(seed, 7, static_cast<uint64_t>(b * 100 + piece++), 0, 8));
        expect_ok(DeviceType::cpu, CausalConv1dArgs{rows(chunk_out, t, t + len), rows(x, t, t + len), weight, bias,
                                                    chunk_state, i32s({0, static_cast<int32_t>(len)}),
                                                    i32s({slots[static_cast<size_t>(b)]}), bools({1}), 1});
        t += len;
      }
    }
    expect_same(chunk_out, whole_out, "chunked outputs");
    expect_same(chunk_state, whole_state, "chunked final states");
    // The slot no sequence names is untouched.
    for (int64_t e = 0; e < D * (W - 1); ++e)
      EXPECT_EQ(get(whole_state.view(), 0, e / (W - 1), e % (W - 1)), get(state0.view(), 0, e / (W - 1), e % (W - 1)));
  }
}

// Sequences packed in one call never see each other: changing one sequence's inputs and
// state changes nothing of the others.
TEST(CausalConv1d, PackedSequencesAreIndependent) {
  const uint64_t seed = test::seed_for("causal_conv1d_independent");
  const int64_t D = 16, W = 4, T = 3 + 9 + 2;
  const Tensor weight = uniform({D, W}, DType::bf16, seed, 2, -1.f, 1.f);
  const Tensor x = uniform({T, D}, DType::bf16, seed, 1), state = uniform({3, D, W - 1}, DType::bf16, seed, 4);
  auto run = [&](const Tensor& xs, const Tensor& st) {
    Tensor s = st.clone(), out = Tensor::empty({T, D}, DType::bf16);
    expect_ok(DeviceType::cpu, CausalConv1dArgs{out, xs, weight, {}, s, i32s({0, 3, 12, 14}), i32s({2, 0, 1}), bools({1, 1, 0}), 1});
    return std::make_pair(out, s);
  };
  const auto [out_a, state_a] = run(x, state);
  Tensor x2 = x.clone(), state2 = state.clone();
  for (int64_t t = 3; t < 12; ++t)
    for (int64_t d = 0; d < D; ++d) set(x2.view(), 7.0, t, d);  // sequence 1's tokens
  for (int64_t d = 0; d < D; ++d)
    for (int64_t j = 0; j < W - 1; ++j) set(state2.view(), -7.0, 0, d, j);  // sequence 1's slot
  const auto [out_b, state_b] = run(x2, state2);
  for (int64_t t : {0, 1, 2, 12, 13})
    for (int64_t d = 0; d < D; ++d) EXPECT_EQ(get(out_a.view(), t, d), get(out_b.view(), t, d)) << t << "," << d;
  for (int64_t s : {1, 2})
    for (int64_t d = 0; d < D; ++d)
      for (int64_t j = 0; j < W - 1; ++j) EXPECT_EQ(get(state_a.view(), s, d, j), get(state_b.view(), s, d, j));
}

// A padding sequence (slot -1) is computed from zeros and neither reads nor writes a slot.
TEST(CausalConv1d, PaddingSequenceTouchesNoSlot) {
  const uint64_t seed = test::seed_for("causal_conv1d_padding");
  const int64_t D = 8, W = 4;
  const Tensor weight = uniform({D, W}, DType::f32, seed, 2, -1.f, 1.f), x = uniform({5, D}, DType::f32, seed, 1);
  const Tensor state0 = uniform({2, D, W - 1}, DType::f32, seed, 4);
  Tensor state = state0.clone(), out = Tensor::empty({5, D}, DType::f32);
  expect_ok(DeviceType::cpu, CausalConv1dArgs{out, x, weight, {}, state, i32s({0, 5}), i32s({-1}), bools({1}), 0});
  expect_same(state, state0, "padding leaves the pool alone");
  Tensor fresh_state = state0.clone(), fresh_out = Tensor::empty({5, D}, DType::f32);
  expect_ok(DeviceType::cpu, CausalConv1dArgs{fresh_out, x, weight, {}, fresh_state, i32s({0, 5}), i32s({1}), bools({0}), 0});
  expect_same(out, fresh_out, "padding computes as a fresh sequence");
}

// vLLM's slot layout, [W - 1, D] per slot seen through a [S, D, W - 1] view with strides
// (slot, 1, D), gives what the channel-major layout gives.
TEST(CausalConv1d, TokenMajorSlotsMatchChannelMajor) {
  const uint64_t seed = test::seed_for("causal_conv1d_token_major");
  const int64_t D = 12, W = 4, S = 3, T = 2 + 6;
  const Tensor weight = uniform({D, W}, DType::bf16, seed, 2, -1.f, 1.f), x = uniform({T, D}, DType::bf16, seed, 1);
  const Tensor cm = uniform({S, D, W - 1}, DType::bf16, seed, 4);
  Tensor tm_storage = Tensor::empty({S, W - 1, D}, DType::bf16);
  TensorView tm = tm_storage.view();
  std::swap(tm.shape[1], tm.shape[2]);
  std::swap(tm.strides[1], tm.strides[2]);
  for (int64_t s = 0; s < S; ++s)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t j = 0; j < W - 1; ++j) set(tm, get(cm.view(), s, d, j), s, d, j);
  Tensor cm_state = cm.clone(), out_cm = Tensor::empty({T, D}, DType::bf16), out_tm = Tensor::empty({T, D}, DType::bf16);
  expect_ok(DeviceType::cpu, CausalConv1dArgs{out_cm, x, weight, {}, cm_state, i32s({0, 2, 8}), i32s({2, 0}), bools({1, 0}), 1});
  expect_ok(DeviceType::cpu, CausalConv1dArgs{out_tm, x, weight, {}, tm, i32s({0, 2, 8}), i32s({2, 0}), bools({1, 0}), 1});
  expect_same(out_tm, out_cm, "outputs");
  for (int64_t s = 0; s < S; ++s)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t j = 0; j < W - 1; ++j) EXPECT_EQ(get(tm, s, d, j), get(cm_state.view(), s, d, j));
  // The update op too.
  Tensor cm2 = cm_state.clone(), u_cm = Tensor::empty({2, D}, DType::bf16), u_tm = Tensor::empty({2, D}, DType::bf16);
  const Tensor xu = uniform({2, D}, DType::bf16, seed, 5);
  expect_ok(DeviceType::cpu, CausalConv1dUpdateArgs{u_cm, xu, weight, {}, cm2, i32s({1, 2}), 1});
  expect_ok(DeviceType::cpu, CausalConv1dUpdateArgs{u_tm, xu, weight, {}, tm, i32s({1, 2}), 1});
  expect_same(u_tm, u_cm, "update outputs");
  for (int64_t s = 0; s < S; ++s)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t j = 0; j < W - 1; ++j) EXPECT_EQ(get(tm, s, d, j), get(cm2.view(), s, d, j));
}

// N single-token updates equal one prefill of the same N tokens continuing from the same
// state; one update call with the N tokens equals both.
TEST(CausalConv1dUpdate, TokenByTokenEqualsPrefillAndMultiToken) {
  const uint64_t seed = test::seed_for("causal_conv1d_update_equivalence");
  for (int64_t W : {2, 3, 4}) {
    const int64_t B = 3, N = 5, D = 16;
    const DType dt = DType::bf16;
    const Tensor weight = uniform({D, W}, dt, seed, 2, -1.f, 1.f), bias = uniform({D}, dt, seed, 3, -0.5f, 0.5f);
    const Tensor x = uniform({B, N, D}, dt, seed, 1);  // sequence-major, as the update takes it
    const Tensor state0 = uniform({B + 2, D, W - 1}, dt, seed, 4);
    const Tensor slots = i32s({4, 0, 2});
    // (a) token by token.
    Tensor st_a = state0.clone(), out_a = Tensor::empty({B, N, D}, dt);
    for (int64_t n = 0; n < N; ++n) {
      TensorView xn = x.view(), on = out_a.view();
      xn.rank = on.rank = 2;
      xn.data = xn.element_ptr(n * D), on.data = on.element_ptr(n * D);
      xn.strides[0] = on.strides[0] = N * D;
      xn.shape[1] = on.shape[1] = D;
      xn.strides[1] = on.strides[1] = 1;
      expect_ok(DeviceType::cpu, CausalConv1dUpdateArgs{on, xn, weight, bias, st_a, slots, 1});
    }
    // (b) one call with N tokens per sequence.
    Tensor st_b = state0.clone(), out_b = Tensor::empty({B, N, D}, dt);
    expect_ok(DeviceType::cpu, CausalConv1dUpdateArgs{out_b, x, weight, bias, st_b, slots, 1});
    // (c) one prefill: the B sequences of N tokens, packed, every one continuing.
    Tensor st_c = state0.clone(), out_c = Tensor::empty({B * N, D}, dt);
    expect_ok(DeviceType::cpu, CausalConv1dArgs{out_c, x.reshape({B * N, D}), weight, bias, st_c,
                                                i32s({0, 5, 10, 15}), slots, bools({1, 1, 1}), 1});
    const std::string w = "width " + std::to_string(W);
    expect_same(out_b, out_a, w + ": multi-token outputs vs one by one");
    expect_same(st_b, st_a, w + ": multi-token states vs one by one");
    expect_same(out_c.reshape({B, N, D}), out_a, w + ": prefill outputs vs one by one");
    expect_same(st_c, st_a, w + ": prefill states vs one by one");
  }
}

TEST(CausalConv1dUpdate, PaddingComputesFromZerosAndKeepsThePool) {
  const Tensor weight = f32s({1, 3}, {1, 10, 100});
  const Tensor state0 = f32s({2, 1, 2}, {1, 2, 3, 4});
  Tensor state = state0.clone(), out = Tensor::empty({2, 1}, DType::f32);
  expect_ok(DeviceType::cpu, CausalConv1dUpdateArgs{out, f32s({2, 1}, {5, 6}), weight, {}, state, i32s({-1, 1}), 0});
  EXPECT_EQ(out.data_as<float>()[0], 500);
  EXPECT_EQ(out.data_as<float>()[1], 3 + 40 + 600);
  EXPECT_EQ(state.data_as<float>()[0], 1);  // slot 0: nobody's
  EXPECT_EQ(state.data_as<float>()[1], 2);
  EXPECT_EQ(state.data_as<float>()[2], 4);  // slot 1 shifted by one
  EXPECT_EQ(state.data_as<float>()[3], 6);
}

TEST(CausalConv1dErrors, BadArgumentsAreClearErrors) {
  const auto cpu = DeviceType::cpu;
  const int64_t D = 8;
  Tensor out = Tensor::zeros({6, D}, DType::bf16), x = Tensor::zeros({6, D}, DType::bf16),
         w = Tensor::zeros({D, 4}, DType::bf16), state = Tensor::zeros({3, D, 3}, DType::bf16);
  const Tensor cu = i32s({0, 2, 6}), idx = i32s({0, 2}), init = bools({1, 0});
  auto args = [&](CausalConv1dArgs a) { return a; };
  expect_ok(cpu, args({out, x, w, {}, state, cu, idx, init, 1}));
  expect_ok(cpu, args({out, x, w, {}, state, cu, idx, {}, 0}));
  expect_invalid(cpu, args({out, x, w, {}, state, i32s({0, 2, 5}), idx, init, 1}), "cu_seqlens[batch] must be the token count 6");
  expect_invalid(cpu, args({out, x, w, {}, state, i32s({1, 2, 6}), idx, init, 1}), "cu_seqlens[0] must be 0");
  expect_invalid(cpu, args({out, x, w, {}, state, i32s({0, 4, 3, 6}), i32s({0, 1, 2}), bools({0, 0, 0}), 1}),
                 "cu_seqlens must be non-decreasing");
  expect_invalid(cpu, args({out, x, w, {}, state, cu, i32s({0, 3}), init, 1}), "outside the conv_state pool of 3 slots");
  expect_invalid(cpu, args({out, x, w, {}, state, cu, i32s({1, 1}), init, 1}), "names a slot another sequence");
  expect_invalid(cpu, args({out, x, w, {}, state, cu, i32s({0}), init, 1}), "state_indices dimension 0 must be 2");
  expect_invalid(cpu, args({out, x, w, {}, state, cu, idx, i32s({1, 0}), 1}), "has_initial_state must be bool");
  expect_invalid(cpu, args({out, x, w, {}, state, Tensor::zeros({3}, DType::i64), idx, init, 1}), "cu_seqlens must be i32");
  expect_invalid(cpu, args({out, x, Tensor::zeros({D, 5}, DType::bf16), {}, Tensor::zeros({3, D, 4}, DType::bf16), cu, idx, init, 1}),
                 "weight width (taps per filter) must be 2, 3 or 4");
  expect_invalid(cpu, args({out, x, Tensor::zeros({D + 1, 4}, DType::bf16), {}, state, cu, idx, init, 1}),
                 "weight must be [8, width]");
  expect_invalid(cpu, args({out, x, w, Tensor::zeros({D + 1}, DType::bf16), state, cu, idx, init, 1}), "bias dimension 0 must be 8");
  expect_invalid(cpu, args({out, x, w, {}, Tensor::zeros({3, D, 2}, DType::bf16), cu, idx, init, 1}),
                 "conv_state must be [slots, 8, 3]");
  expect_invalid(cpu, args({out, x, w, {}, Tensor::zeros({3, D, 3}, DType::f16), cu, idx, init, 1}), "conv_state must be bf16");
  TensorView odd = state.view();
  odd.strides[1] = 4;  // neither slot layout
  odd.strides[0] = 40;
  Tensor big = Tensor::zeros({3 * 40}, DType::bf16);
  odd.data = big.data();
  expect_invalid(cpu, args({out, x, w, {}, odd, cu, idx, init, 1}), "each conv_state slot must be packed");
  expect_invalid(cpu, args({out, x, Tensor::zeros({D, 4}, DType::f32), {}, state, cu, idx, init, 1}), "weight must be bf16");
  expect_invalid(cpu, args({Tensor::zeros({6, D}, DType::f16), x, w, {}, state, cu, idx, init, 1}), "out must be bf16");
  expect_invalid(cpu, args({out, x, w, {}, state, cu, idx, init, 2}), "silu must be 0 (no activation) or 1 (SiLU)");
  expect_invalid(cpu, args({out, Tensor::zeros({6, D}, DType::i32), w, {}, state, cu, idx, init, 1}),
                 "x must be one of f32/f16/bf16");
  expect_invalid(cpu, args({x, x, w, {}, state, cu, idx, init, 1}), "out must not overlap x");

  Tensor xu = Tensor::zeros({2, D}, DType::bf16), ou = Tensor::zeros({2, D}, DType::bf16);
  expect_ok(cpu, CausalConv1dUpdateArgs{ou, xu, w, {}, state, idx, 1});
  expect_invalid(cpu, CausalConv1dUpdateArgs{ou, xu, w, {}, state, i32s({0, 1, 2}), 1}, "state_indices dimension 0 must be 2");
  expect_invalid(cpu, CausalConv1dUpdateArgs{ou, xu, w, {}, state, i32s({5, 1}), 1}, "outside the conv_state pool");
  expect_invalid(cpu, CausalConv1dUpdateArgs{ou, xu, w, {}, state, i32s({2, 2}), 1}, "names a slot another sequence");
  expect_invalid(cpu, CausalConv1dUpdateArgs{Tensor::zeros({2, 1, D}, DType::bf16), xu, w, {}, state, idx, 1},
                 "out must have the shape of x");
  expect_invalid(cpu, CausalConv1dUpdateArgs{ou, Tensor::zeros({D}, DType::bf16), w, {}, state, idx, 1},
                 "x must be [batch, channels] or [batch, tokens, channels]");
  expect_invalid(cpu, CausalConv1dUpdateArgs{ou, xu, w, {}, ou, idx, 1}, "conv_state must have rank 3");
}

TEST(CausalConv1dErrors, CudaImplementationsRejectHostTensors) {
  if (!OpRegistry::global().baseline(CausalConv1dArgs::kName, DeviceType::cuda)) GTEST_SKIP() << "CPU-only build";
  const int64_t D = 8;
  Tensor out = Tensor::zeros({6, D}, DType::bf16), x = Tensor::zeros({6, D}, DType::bf16),
         w = Tensor::zeros({D, 4}, DType::bf16), state = Tensor::zeros({3, D, 3}, DType::bf16);
  expect_invalid(DeviceType::cuda, CausalConv1dArgs{out, x, w, {}, state, i32s({0, 6}), i32s({0}), {}, 1}, "x must be on cuda");
  expect_invalid(DeviceType::cuda, CausalConv1dUpdateArgs{Tensor::zeros({1, D}, DType::bf16), Tensor::zeros({1, D}, DType::bf16),
                                                          w, {}, state, i32s({0}), 1},
                 "x must be on cuda");
}

}  // namespace
}  // namespace fk
