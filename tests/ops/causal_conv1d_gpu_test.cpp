// causal_conv1d's and causal_conv1d_update's CUDA baselines on what the generic GPU oracle
// test does not cover: the production (bench) shapes, checked against the oracle on slices
// of channels (every token and slot of them; the full CPU oracle would take minutes) with
// their time and bandwidth printed; views the test workloads cannot make (token-major
// slots, row-strided and misaligned x and out: the scalar path) against the CPU
// implementation; the state tests users rely on, on the device (N single-token updates
// equal one prefill of the N tokens and one update of N tokens, bit for bit; a chunked
// prefill equals a whole one); a slot past the pool's end treated as padding.
#include <gtest/gtest.h>

#include <algorithm>

#include "fk/element.h"
#include "fk/ops/ssm_conv.h"
#include "harness/check/op_check.h"
#include "ops/common/case_builder.h"
#include "ops/common/validate.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::CausalConv1dArgs;
using ops::CausalConv1dUpdateArgs;

Tensor i32s(const std::vector<int32_t>& v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::i32);
  std::copy(v.begin(), v.end(), t.data_as<int32_t>());
  return t;
}

// Channels [c0, c0 + n) of a view whose channel dimension is `dim` (views stay views).
TensorView channels(TensorView v, int dim, int64_t c0, int64_t n) {
  v.data = v.element_ptr(c0 * v.strides[dim]);
  v.shape[dim] = n;
  return v;
}

// Element (i, j, k) of a rank-2 or rank-3 host view (rank 2: i is 0).
double at(const TensorView& v, int64_t i, int64_t j, int64_t k) { return v.rank == 3 ? get(v, i, j, k) : get(v, j, k); }

// Two host views of one shape, element by element: |a - e| <= atol + rtol |e|.
void expect_near(const TensorView& actual, const TensorView& expected, Tolerance tol, const std::string& what) {
  ASSERT_EQ(actual.rank, expected.rank) << what;
  const int64_t I = actual.rank == 3 ? actual.shape[0] : 1, J = actual.shape[actual.rank - 2], K = actual.shape[actual.rank - 1];
  int64_t bad = 0;
  for (int64_t i = 0; i < I; ++i)
    for (int64_t j = 0; j < J; ++j)
      for (int64_t k = 0; k < K; ++k) {
        const double a = at(actual, i, j, k), e = at(expected, i, j, k);
        if (!(std::fabs(a - e) <= tol.atol + tol.rtol * std::fabs(e)) && bad++ < 5)
          ADD_FAILURE() << what << ": [" << i << ", " << j << ", " << k << "] = " << a << ", expected " << e;
      }
  EXPECT_EQ(bad, 0) << what;
}

// Exactly equal host copies of two tensors of any device.
void expect_same(const Tensor& a, const Tensor& b, const std::string& what) {
  expect_near(a.to(Device::cpu()).view(), b.to(Device::cpu()).view(), {0, 0}, what);
}

Tensor f64_copy(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), DType::f64);
  for (int64_t i = 0; i < t.numel(); ++i) out.data_as<double>()[i] = load_element(t.view().element_ptr(i), t.dtype());
  return out;
}

// A device case's outputs on channel slices, against the oracle run on the same slices of
// its host inputs (conv channels are independent, and every view the ops take may be a
// slice of its channels). Tensors 0 and 4 are out and conv_state in both ops.
template <class A>
void check_channel_slices(const OpDef& def, const OpCase& host, OpCase& dev) {
  const A& h = host.as<A>();
  const int64_t D = h.weight.shape[0];
  const int xdim = h.x.rank - 1;
  bench::poison_outputs(def, dev);
  const fk_status s = OpRegistry::global().baseline(def.name, DeviceType::cuda)(dev.args_ptr(), nullptr);
  ASSERT_EQ(s, FK_OK) << last_error_message();
  rt::device_synchronize();
  const Tensor out_dev = dev.tensors[0].to(Device::cpu()), state_dev = dev.tensors[4].to(Device::cpu());
  EXPECT_EQ(test::count_nonfinite(out_dev), 0) << "unwritten (poisoned) or non-finite outputs";
  const int64_t n = std::min<int64_t>(64, D);
  for (int64_t c0 : {int64_t{0}, D / 2 + 8, D - n}) {
    if (c0 + n > D) continue;
    A a = h;
    a.x = channels(h.x, xdim, c0, n);
    Shape slice_shape(a.x.shape, a.x.shape + a.x.rank);
    Tensor out_ref = Tensor::empty(slice_shape, DType::f64), state_ref = f64_copy(host.tensors[4]);
    a.out = out_ref;
    a.weight = channels(h.weight, 0, c0, n);
    if (ops::arg_present(h.bias)) a.bias = channels(h.bias, 0, c0, n);
    a.conv_state = channels(state_ref, 1, c0, n);
    test::expect_ok(DeviceType::cpu, a);
    const std::string where = " of channels from " + std::to_string(c0);
    expect_near(channels(out_dev, xdim, c0, n), a.out, default_tolerance(h.x.dtype), "out" + where);
    const TensorView sd = channels(state_dev, 1, c0, n), sr = a.conv_state;
    for (int64_t slot = 0; slot < sd.shape[0]; ++slot) {
      TensorView one_d = sd, one_r = sr;
      one_d.data = one_d.element_ptr(slot * sd.strides[0]), one_r.data = one_r.element_ptr(slot * sr.strides[0]);
      one_d.rank = one_r.rank = 2;
      for (int k = 0; k < 2; ++k) {
        one_d.shape[k] = sd.shape[k + 1], one_d.strides[k] = sd.strides[k + 1];
        one_r.shape[k] = sr.shape[k + 1], one_r.strides[k] = sr.strides[k + 1];
      }
      expect_near(one_d, one_r, {0, 0}, "conv_state slot " + std::to_string(slot) + where);
    }
  }
}

template <class A>
void check_bench_workloads() {
  const OpDef& def = OpRegistry::global().def(A::kName);
  for (const Json& w : def.bench_workloads) {
    SCOPED_TRACE(w.dump());
    const OpCase host = def.make_case(w, test::seed_for(w.dump().append(A::kName)));
    OpCase dev = bench::case_to_device(def, host, Device::cuda());
    check_channel_slices<A>(def, host, dev);
    // Timed on a fresh copy: each call updates the states, which changes no cost.
    test::report_time(def, bench::case_to_device(def, host, Device::cuda()));
  }
}

TEST(CausalConv1dGpu, BenchShapesAgainstOracleOnChannelSlices) {
  FK_REQUIRE_GPU();
  check_bench_workloads<CausalConv1dArgs>();
}

TEST(CausalConv1dUpdateGpu, BenchShapesAgainstOracleOnChannelSlices) {
  FK_REQUIRE_GPU();
  check_bench_workloads<CausalConv1dUpdateArgs>();
}

// x and out as row-strided or misaligned slices of wider buffers (the scalar path when a
// row is off the 16-byte vector), and the pool in vLLM's token-major slot layout.
struct Geometry {
  int64_t D, x_pad, out_pad, offset;
  bool token_major;
};
const Geometry kGeometries[] = {
    {264, 8, 16, 0, false},  // padded rows, aligned: vector path
    {264, 8, 16, 0, true},   // the same with token-major slots
    {264, 1, 0, 0, false},   // x rows off the vector: scalar path
    {256, 0, 0, 1, true},    // misaligned start: scalar path
    {2056, 3, 5, 2, false},  // channels over several blocks, ragged
};

// The pool [S, D, W - 1] over a token-major storage [S, W - 1, D], filled with `src`'s values.
TensorView token_major_copy(const Tensor& src, Tensor& storage) {
  const int64_t S = src.size(0), D = src.size(1), Wm1 = src.size(2);
  storage = Tensor::empty({S, Wm1, D}, src.dtype());
  TensorView v = storage.view();
  std::swap(v.shape[1], v.shape[2]);
  std::swap(v.strides[1], v.strides[2]);
  for (int64_t s = 0; s < S; ++s)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t j = 0; j < Wm1; ++j) set(v, get(src.view(), s, d, j), s, d, j);
  return v;
}

TEST(CausalConv1dGpu, StridedMisalignedAndTokenMajorViewsMatchCpu) {
  FK_REQUIRE_GPU();
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (const Geometry& g : kGeometries) {
      const std::string label = std::string(dtype_name(dt)) + " D=" + std::to_string(g.D) + " x_pad=" +
                                std::to_string(g.x_pad) + " out_pad=" + std::to_string(g.out_pad) + " offset=" +
                                std::to_string(g.offset) + (g.token_major ? " token-major" : " channel-major");
      SCOPED_TRACE(label);
      const uint64_t seed = test::seed_for("causal_conv1d_gpu_views" + label);
      const std::vector<int32_t> cu = {0, 40, 41, 43, 100};
      const int64_t T = cu.back(), W = 4, S = 6;
      const auto x = test::make_strided(T, g.D, g.D + g.x_pad, g.offset, dt, seed, 1, -2.f, 2.f);
      const auto out = test::make_strided(T, g.D, g.D + g.out_pad, g.offset, dt, seed, 2, -2.f, 2.f);
      const Tensor weight = ops::random_tensor({g.D, W}, dt, seed, 3, -1.f, 1.f), bias = ops::random_tensor({g.D}, dt, seed, 4);
      const Tensor pool = ops::random_tensor({S, g.D, W - 1}, dt, seed, 5, -2.f, 2.f);
      Tensor init = Tensor::empty({4}, DType::boolean);
      for (int b = 0; b < 4; ++b) init.data_as<uint8_t>()[b] = static_cast<uint8_t>(b != 2);
      const Tensor slots = i32s({3, 0, 5, -1});
      Tensor h_store;
      TensorView h_state = pool.view();
      Tensor h_pool = pool.clone();
      if (g.token_major) h_state = token_major_copy(pool, h_store);
      else h_state = h_pool.view();
      Tensor d_pool = g.token_major ? h_store.to(Device::cuda()) : h_pool.to(Device::cuda());
      TensorView d_state = h_state;
      d_state.data = d_pool.data(), d_state.device = Device::cuda();
      const auto xd = test::strided_to(x, Device::cuda()), outd = test::strided_to(out, Device::cuda());
      auto outh = out;
      const Tensor wd = weight.to(Device::cuda()), bd = bias.to(Device::cuda()), cud = i32s(cu).to(Device::cuda()),
                   sd = slots.to(Device::cuda()), id = init.to(Device::cuda());
      test::expect_ok(DeviceType::cpu, CausalConv1dArgs{outh.view, x.view, weight, bias, h_state, i32s(cu), slots, init, 1});
      test::expect_ok(DeviceType::cuda, CausalConv1dArgs{outd.view, xd.view, wd, bd, d_state, cud, sd, id, 1});
      rt::device_synchronize();
      test::expect_strided_near(outd, outh, default_tolerance(dt), label + " out");
      test::expect_strided_near(xd, x, {0, 0}, label + " x");
      expect_same(d_pool, g.token_major ? h_store : h_pool, label + " pool");
      // The update on the same views: a [B, D] x with padded rows.
      const auto xu = test::make_strided(4, g.D, g.D + g.x_pad, g.offset, dt, seed, 6, -2.f, 2.f);
      auto ouh = test::make_strided(4, g.D, g.D + g.out_pad, g.offset, dt, seed, 7, -2.f, 2.f);
      const auto xud = test::strided_to(xu, Device::cuda()), oud = test::strided_to(ouh, Device::cuda());
      test::expect_ok(DeviceType::cpu, CausalConv1dUpdateArgs{ouh.view, xu.view, weight, bias, h_state, slots, 1});
      test::expect_ok(DeviceType::cuda, CausalConv1dUpdateArgs{oud.view, xud.view, wd, bd, d_state, sd, 1});
      rt::device_synchronize();
      test::expect_strided_near(oud, ouh, default_tolerance(dt), label + " update out");
      expect_same(d_pool, g.token_major ? h_store : h_pool, label + " pool after the update");
    }
}

// On the device, bit for bit: N single-token updates, one update of N tokens and one prefill
// of the N tokens continuing from the same states; and a prefill in chunks against a whole one.
TEST(CausalConv1dGpu, StateCarriesAcrossCallsExactly) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("causal_conv1d_gpu_state");
  const Device gpu = Device::cuda();
  for (int64_t W : {2, 3, 4}) {
    SCOPED_TRACE("width " + std::to_string(W));
    const int64_t B = 5, N = 6, D = 8192 + 8;
    const DType dt = DType::bf16;
    const Tensor weight = ops::random_tensor({D, W}, dt, seed, 2, -1.f, 1.f).to(gpu);
    const Tensor x = ops::random_tensor({B, N, D}, dt, seed, 1, -2.f, 2.f).to(gpu);
    const Tensor state0 = ops::random_tensor({B + 3, D, W - 1}, dt, seed, 4, -2.f, 2.f).to(gpu);
    const Tensor slots = i32s({7, 0, 3, 5, 1}).to(gpu);
    Tensor st_a = state0.clone(), out_a = Tensor::empty({B, N, D}, dt, gpu);
    for (int64_t n = 0; n < N; ++n) {
      TensorView xn = x.view(), on = out_a.view();
      for (TensorView* v : {&xn, &on}) {
        v->rank = 2;
        v->data = v->element_ptr(n * D);
        v->shape[1] = D, v->strides[0] = N * D, v->strides[1] = 1;
      }
      test::expect_ok(DeviceType::cuda, CausalConv1dUpdateArgs{on, xn, weight, {}, st_a, slots, 1});
    }
    Tensor st_b = state0.clone(), out_b = Tensor::empty({B, N, D}, dt, gpu);
    test::expect_ok(DeviceType::cuda, CausalConv1dUpdateArgs{out_b, x, weight, {}, st_b, slots, 1});
    Tensor st_c = state0.clone(), out_c = Tensor::empty({B * N, D}, dt, gpu);
    std::vector<int32_t> cu;
    for (int64_t b = 0; b <= B; ++b) cu.push_back(static_cast<int32_t>(b * N));
    Tensor init = Tensor::empty({B}, DType::boolean);
    std::fill_n(init.data_as<uint8_t>(), B, uint8_t{1});
    test::expect_ok(DeviceType::cuda, CausalConv1dArgs{out_c, x.reshape({B * N, D}), weight, {}, st_c, i32s(cu).to(gpu),
                                                       slots, init.to(gpu), 1});
    // Chunked: tokens [0, 2) then [2, N) of every sequence.
    Tensor st_d = state0.clone(), out_d = Tensor::empty({B, N, D}, dt, gpu);
    for (auto [lo, hi] : {std::pair<int64_t, int64_t>{0, 2}, {2, N}}) {
      TensorView xs = x.view(), os = out_d.view();
      for (TensorView* v : {&xs, &os}) {
        v->data = v->element_ptr(lo * D);
        v->shape[1] = hi - lo;
      }
      // A [B, hi - lo, D] slice is not a packed [T, D] matrix: copy it to one.
      const int64_t L = hi - lo;
      Tensor packed = Tensor::empty({B * L, D}, dt, gpu), packed_out = Tensor::empty({B * L, D}, dt, gpu);
      for (int64_t b = 0; b < B; ++b)
        rt::memcpy_sync(packed.view().element_ptr(b * L * D), gpu, xs.element_ptr(b * N * D), gpu, L * D * 2);
      std::vector<int32_t> cu_l;
      for (int64_t b = 0; b <= B; ++b) cu_l.push_back(static_cast<int32_t>(b * L));
      test::expect_ok(DeviceType::cuda, CausalConv1dArgs{packed_out, packed, weight, {}, st_d, i32s(cu_l).to(gpu), slots,
                                                         init.to(gpu), 1});
      rt::device_synchronize();
      for (int64_t b = 0; b < B; ++b)
        rt::memcpy_sync(os.element_ptr(b * N * D), gpu, packed_out.view().element_ptr(b * L * D), gpu, L * D * 2);
    }
    rt::device_synchronize();
    expect_same(out_b, out_a, "multi-token update vs one by one: out");
    expect_same(st_b, st_a, "multi-token update vs one by one: state");
    expect_same(out_c.reshape({B, N, D}), out_a, "prefill vs one by one: out");
    expect_same(st_c, st_a, "prefill vs one by one: state");
    expect_same(out_d, out_a, "chunked prefill vs one by one: out");
    expect_same(st_d, st_a, "chunked prefill vs one by one: state");
  }
}

// The CUDA baselines cannot report a slot past the pool's end; they treat it as padding:
// outputs from zeros, no memory outside the pool touched.
TEST(CausalConv1dGpu, SlotPastThePoolIsPadding) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("causal_conv1d_gpu_oob");
  const Device gpu = Device::cuda();
  const int64_t D = 64, W = 4, T = 7;
  const DType dt = DType::f32;
  const Tensor weight = ops::random_tensor({D, W}, dt, seed, 2, -1.f, 1.f), x = ops::random_tensor({T, D}, dt, seed, 1);
  // A pool of 2 slots inside a buffer of 3: the third is the guard.
  const Tensor buffer = ops::random_tensor({3, D, W - 1}, dt, seed, 4);
  Tensor buffer_d = buffer.to(gpu);
  TensorView pool = buffer_d.view();
  pool.shape[0] = 2;
  Tensor init = Tensor::empty({1}, DType::boolean);
  init.data_as<uint8_t>()[0] = 1;
  Tensor out_oob = Tensor::empty({T, D}, dt, gpu), out_pad = Tensor::empty({T, D}, dt, gpu);
  test::expect_ok(DeviceType::cuda, CausalConv1dArgs{out_oob, x.to(gpu), weight.to(gpu), {}, pool, i32s({0, 7}).to(gpu),
                                                     i32s({2}).to(gpu), init.to(gpu), 1});
  test::expect_ok(DeviceType::cuda, CausalConv1dArgs{out_pad, x.to(gpu), weight.to(gpu), {}, pool, i32s({0, 7}).to(gpu),
                                                     i32s({-1}).to(gpu), init.to(gpu), 1});
  Tensor upd = Tensor::empty({1, D}, dt, gpu);
  test::expect_ok(DeviceType::cuda, CausalConv1dUpdateArgs{upd, ops::random_tensor({1, D}, dt, seed, 5).to(gpu), weight.to(gpu),
                                                           {}, pool, i32s({2}).to(gpu), 1});
  rt::device_synchronize();
  expect_same(out_oob, out_pad, "a slot past the pool computes as padding");
  expect_same(buffer_d, buffer, "no slot (and not the guard past the pool) was written");
}

}  // namespace
}  // namespace fk
