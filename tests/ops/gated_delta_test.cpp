// The gated delta rule ops on the CPU: the chunked algorithm of the CUDA baseline (written
// out on the host, gated_delta_reference.h) against the token-by-token f64 reference on
// every test workload, in double (the algebra) and in f32 (the error the tolerance allows);
// packed sequences never see each other's state; a prefill split in two calls, the state
// carried in its slot, equals one call; grouped value heads use the key head
// h / (Hv / Hk); closed forms at the edges (beta 0, beta 1, a strong decay, no initial
// state); slots no sequence names stay untouched; and clear errors for bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "fk/element.h"
#include "fk/ops/gated_delta.h"
#include "harness/check/op_check.h"
#include "ops/norm_act_support.h"
#include "ops/ssm/gated_delta_reference.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::ChunkGatedDeltaRuleArgs;
using ops::FusedRecurrentGatedDeltaRuleArgs;
using ops::GatedDeltaRuleArgs;
using A = ChunkGatedDeltaRuleArgs;

const OpDef& def() { return OpRegistry::global().def(A::kName); }

OpCase make(const Json& w, const std::string& name) { return def().make_case(w, test::seed_for(name + w.dump())); }

ops::GatedDeltaDims dims(const GatedDeltaRuleArgs& a) {
  return ops::validate_gated_delta_rule("test", a, DeviceType::cpu);
}

// The reference's outputs (f64 o and state) for a case.
OpCase reference(const OpCase& c) {
  OpCase r = bench::make_oracle_case(def(), c);
  const auto& a = r.as<GatedDeltaRuleArgs>();
  ops::gated_delta_rule_reference(a, dims(a));
  return r;
}

// Largest |x - ref| / (1 + |ref|) over two tensors of one shape.
double max_scaled_error(const Tensor& x, const Tensor& ref) {
  EXPECT_EQ(x.numel(), ref.numel());
  double worst = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double a = load_element(x.view().element_ptr(i), x.dtype());
    const double b = load_element(ref.view().element_ptr(i), ref.dtype());
    worst = std::max(worst, std::isnan(a) ? INFINITY : std::fabs(a - b) / (1 + std::fabs(b)));
  }
  return worst;
}

TEST(GatedDeltaChunked, AlgebraEqualsTheTokenLoopInDouble) {
  for (const Json& w : def().test_workloads) {
    SCOPED_TRACE(w.dump());
    const OpCase c = make(w, "algebra");
    const OpCase ref = reference(c);
    OpCase chunked = bench::make_oracle_case(def(), c);
    const auto& a = chunked.as<GatedDeltaRuleArgs>();
    ops::gated_delta_rule_chunked_host<double>(a, dims(a));
    EXPECT_LT(max_scaled_error(chunked.tensors[0], ref.tensors[0]), 1e-9) << "o";
    EXPECT_LT(max_scaled_error(chunked.tensors[1], ref.tensors[1]), 1e-9) << "state";
  }
}

// The chunked algorithm in f32 (the CUDA baseline's arithmetic, in a different order) writing
// the engine's dtypes stays within the ops' tolerance of the reference, with room to spare.
TEST(GatedDeltaChunked, F32ErrorIsWithinTheTolerance) {
  for (const Json& w : def().test_workloads) {
    SCOPED_TRACE(w.dump());
    OpCase c = make(w, "f32");
    const OpCase ref = reference(c);
    const auto& a = c.as<GatedDeltaRuleArgs>();
    ops::gated_delta_rule_chunked_host<float>(a, dims(a));
    for (size_t i : {size_t{0}, size_t{1}}) {
      const TensorArg& arg = def().tensor_args[i];
      Tolerance tol = def().tolerance(c, arg, c.tensors[i].dtype());
      tol.atol /= 4, tol.rtol /= 4;  // a quarter of the tolerance: the GPU's order of sums may differ
      const bench::OutputError e = bench::compare_output(arg.name, c.tensors[i], ref.tensors[i], tol);
      EXPECT_EQ(e.num_bad, 0) << bench::describe_output_error(e) << " max abs err " << e.max_abs_err;
    }
  }
}

// A view of rows [t0, t1) of a token-major tensor.
TensorView rows(const TensorView& v, int64_t t0, int64_t t1) {
  TensorView r = v;
  r.data = v.element_ptr(t0 * v.strides[0]);
  r.shape[0] = t1 - t0;
  return r;
}

Tensor i32(std::initializer_list<int64_t> values) {
  Tensor t = Tensor::empty({static_cast<int64_t>(values.size())}, DType::i32);
  int64_t i = 0;
  for (int64_t x : values) t.data_as<int32_t>()[i++] = static_cast<int32_t>(x);
  return t;
}

// The call on tokens [t0, t1) as the given sequences (cu_seqlens relative to t0), writing
// into the same o and state tensors.
GatedDeltaRuleArgs sub_call(const GatedDeltaRuleArgs& a, int64_t t0, int64_t t1, const Tensor& cu,
                            const Tensor& slots, const Tensor* flags) {
  GatedDeltaRuleArgs s = a;
  s.o = rows(a.o, t0, t1), s.q = rows(a.q, t0, t1), s.k = rows(a.k, t0, t1), s.v = rows(a.v, t0, t1);
  s.g = rows(a.g, t0, t1), s.beta = rows(a.beta, t0, t1);
  s.cu_seqlens = cu.view(), s.state_indices = slots.view();
  s.has_initial_state = flags ? flags->view() : TensorView{};
  return s;
}

using HostImpl = void (*)(const GatedDeltaRuleArgs&, const ops::GatedDeltaDims&);
const HostImpl kImpls[] = {ops::gated_delta_rule_reference, ops::gated_delta_rule_chunked_host<float>};

TEST(GatedDelta, PackedSequencesNeverSeeEachOther) {
  const Json w = {{"seq_lens", {1, 63, 64, 65, 200}}, {"initial", "mixed"}};
  for (HostImpl impl : kImpls) {
    OpCase packed = make(w, "packed"), alone = make(w, "packed");
    const auto& p = packed.as<GatedDeltaRuleArgs>();
    impl(p, dims(p));
    const auto& a = alone.as<GatedDeltaRuleArgs>();
    const int32_t* cu = a.cu_seqlens.ptr<int32_t>();
    for (int64_t n = 0; n < 5; ++n) {
      const Tensor cu1 = i32({0, cu[n + 1] - cu[n]}), slot = i32({a.state_indices.ptr<int32_t>()[n]}),
                   flag = i32({a.has_initial_state.ptr<int32_t>()[n]});
      const GatedDeltaRuleArgs s = sub_call(a, cu[n], cu[n + 1], cu1, slot, &flag);
      impl(s, dims(s));
    }
    // Bit for bit: each sequence's arithmetic is the same whether or not others share the call.
    EXPECT_EQ(test::count_changed_bytes(packed.tensors[0], alone.tensors[0]), 0) << "o";
    EXPECT_EQ(test::count_changed_bytes(packed.tensors[1], alone.tensors[1]), 0) << "state";
  }
}

TEST(GatedDelta, PrefillSplitInTwoCallsEqualsOneCall) {
  for (int64_t split : {1, 63, 64, 65, 128, 199}) {
    SCOPED_TRACE(split);
    const Json w = {{"seq_lens", {200}}, {"dtype", "f32"}, {"beta_dtype", "f32"}};
    for (HostImpl impl : kImpls) {
      OpCase whole = make(w, "split"), parts = make(w, "split");
      const auto& a = whole.as<GatedDeltaRuleArgs>();
      impl(a, dims(a));
      const auto& b = parts.as<GatedDeltaRuleArgs>();
      const Tensor slot = i32({b.state_indices.ptr<int32_t>()[0]});
      const Tensor cu1 = i32({0, split}), cu2 = i32({0, 200 - split});
      const GatedDeltaRuleArgs first = sub_call(b, 0, split, cu1, slot, nullptr);
      impl(first, dims(first));
      const GatedDeltaRuleArgs second = sub_call(b, split, 200, cu2, slot, nullptr);
      impl(second, dims(second));
      // The reference splits exactly; the chunked algorithm chunks differently (within f32 error).
      const double bound = impl == kImpls[0] ? 1e-6 : 1e-4;
      EXPECT_LT(max_scaled_error(parts.tensors[0], whole.tensors[0]), bound) << "o";
      EXPECT_LT(max_scaled_error(parts.tensors[1], whole.tensors[1]), bound) << "state";
    }
  }
}

// Value head h reads key head h / (Hv / Hk): the call with Hk = 2, Hv = 4 equals the call with
// the query/key heads repeated (repeat_interleave) to Hk = Hv = 4.
TEST(GatedDelta, ValueHeadsShareKeyHeadsInOrder) {
  const Json w = {{"seq_lens", {70, 5}}, {"hk", 2}, {"hv", 4}, {"dtype", "f32"}, {"beta_dtype", "f32"}};
  OpCase grouped = make(w, "gqa"), repeated = make(w, "gqa");
  auto& r = repeated.as<GatedDeltaRuleArgs>();
  const int64_t T = r.q.shape[0], K = r.q.shape[2];
  Tensor q4 = Tensor::empty({T, 4, K}, DType::f32), k4 = Tensor::empty({T, 4, K}, DType::f32);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t x = 0; x < K; ++x) set(q4.view(), get(r.q, t, h / 2, x), t, h, x), set(k4.view(), get(r.k, t, h / 2, x), t, h, x);
  r.q = q4.view(), r.k = k4.view();
  for (HostImpl impl : kImpls) {
    const auto& g = grouped.as<GatedDeltaRuleArgs>();
    impl(g, dims(g));
    impl(r, dims(r));
    EXPECT_EQ(test::count_changed_bytes(grouped.tensors[0], repeated.tensors[0]), 0) << "o";
    EXPECT_EQ(test::count_changed_bytes(grouped.tensors[1], repeated.tensors[1]), 0) << "state";
  }
}

// beta = 0 writes nothing: S_t = exp(g_1 + ... + g_t) S_0 and o_t = S_t^T (scale q_t).
TEST(GatedDelta, BetaZeroOnlyDecaysTheState) {
  const Json w = {{"seq_lens", {80}}, {"beta_min", 0.0}, {"beta_max", 0.0}, {"dtype", "f32"}, {"beta_dtype", "f32"}};
  OpCase c = make(w, "beta0");
  const Tensor s0 = c.tensors[1].clone();
  const OpCase ref = reference(c);
  const auto& a = c.as<GatedDeltaRuleArgs>();
  const auto d = dims(a);
  const int64_t slot = a.state_indices.ptr<int32_t>()[0];
  std::vector<double> q, k;
  for (int64_t h = 0; h < d.hv; ++h) {
    double gsum = 0;
    for (int64_t t = 0; t < d.tokens; ++t) {
      gsum += get(a.g, t, h);
      ops::gated_delta_load_qk(a, d, t, h, q, k);
      for (int64_t y = 0; y < d.dv; ++y) {
        double o = 0;
        for (int64_t x = 0; x < d.dk; ++x) o += std::exp(gsum) * get(s0.view(), slot, h, x, y) * q[static_cast<size_t>(x)];
        EXPECT_NEAR(get(ref.tensors[0].view(), t, h, y), o, 1e-9);
      }
    }
    for (int64_t x = 0; x < d.dk; ++x)
      for (int64_t y = 0; y < d.dv; ++y)
        EXPECT_NEAR(get(ref.tensors[1].view(), slot, h, x, y), std::exp(gsum) * get(s0.view(), slot, h, x, y), 1e-9);
  }
}

// beta = 1 and a unit key (L2-normalised): the update replaces the value the state held for
// the key, S^T k = v, whatever was there (the delta rule's overwrite).
TEST(GatedDelta, BetaOneOverwritesTheKeysValue) {
  const Json w = {{"batch", 3}, {"seq_len", 1}, {"beta_min", 1.0}, {"beta_max", 1.0}, {"dtype", "f32"},
                  {"beta_dtype", "f32"}, {"dk", 32}};
  OpCase c = make(w, "beta1");
  const OpCase ref = reference(c);
  const auto& a = c.as<GatedDeltaRuleArgs>();
  const auto d = dims(a);
  std::vector<double> q, k;
  for (int64_t n = 0; n < d.seqs; ++n) {
    const int64_t slot = a.state_indices.ptr<int32_t>()[n];
    for (int64_t h = 0; h < d.hv; ++h) {
      ops::gated_delta_load_qk(a, d, n, h, q, k);
      for (int64_t y = 0; y < d.dv; ++y) {
        double sk = 0;
        for (int64_t x = 0; x < d.dk; ++x) sk += get(ref.tensors[1].view(), slot, h, x, y) * k[static_cast<size_t>(x)];
        EXPECT_NEAR(sk, get(a.v, n, h, y), 1e-4);  // |k|^2 = 1 - O(1e-6 / |k_raw|^2) with the norm's epsilon
      }
    }
  }
}

// A decay of e^-20 or less a token: the initial state is gone after the first token, whose
// output is (scale q.k) beta v, and the final state does not depend on the initial one.
TEST(GatedDelta, StrongDecayForgetsTheInitialState) {
  const Json w = {{"seq_lens", {100, 3}}, {"g_min", -30.0}, {"g_max", -20.0}, {"dtype", "f32"}, {"beta_dtype", "f32"}};
  OpCase c = make(w, "decay"), other = make(w, "decay");
  fill_uniform(other.tensors[1].view(), 77, 1, -5.f, 5.f);  // a different initial pool
  const OpCase ref = reference(c), ref_other = reference(other);
  const auto& a = c.as<GatedDeltaRuleArgs>();
  const auto d = dims(a);
  std::vector<double> q, k;
  for (int64_t n = 0; n < d.seqs; ++n) {
    const int64_t t = a.cu_seqlens.ptr<int32_t>()[n];
    for (int64_t h = 0; h < d.hv; ++h) {
      ops::gated_delta_load_qk(a, d, t, h, q, k);
      double qk = 0;
      for (int64_t x = 0; x < d.dk; ++x) qk += q[static_cast<size_t>(x)] * k[static_cast<size_t>(x)];
      for (int64_t y = 0; y < d.dv; ++y)
        EXPECT_NEAR(get(ref.tensors[0].view(), t, h, y), qk * get(a.beta, t, h) * get(a.v, t, h, y), 1e-7);
    }
    const int64_t slot = a.state_indices.ptr<int32_t>()[n];
    for (int64_t h = 0; h < d.hv; ++h)
      for (int64_t x = 0; x < d.dk; ++x)
        for (int64_t y = 0; y < d.dv; ++y)
          EXPECT_NEAR(get(ref.tensors[1].view(), slot, h, x, y), get(ref_other.tensors[1].view(), slot, h, x, y), 1e-7);
  }
}

// has_initial_state = 0: the slot's contents (NaN here) are never read; the run equals one
// from a zeroed slot. A sequence without tokens leaves its slot as it was (from its slot) or
// writes zeros (without an initial state). Slots no sequence names come back unchanged.
TEST(GatedDelta, NoInitialStateIgnoresTheSlotAndSpareSlotsStay) {
  // Flags of "mixed": 1, 0, 1, 0, 1.
  const Json w = {{"seq_lens", {0, 0, 5, 70, 0}}, {"initial", "mixed"}, {"spare_slots", 3}};
  for (HostImpl impl : kImpls) {
    OpCase nan_slots = make(w, "initial"), zero_slots = make(w, "initial");
    const auto& a = nan_slots.as<GatedDeltaRuleArgs>();
    const auto& z = zero_slots.as<GatedDeltaRuleArgs>();
    const auto d = dims(a);
    const int64_t per_slot = d.hv * d.dk * d.dv;
    float* nan_pool = nan_slots.tensors[1].data_as<float>();
    std::vector<bool> named(static_cast<size_t>(d.slots), false);
    for (int64_t n = 0; n < d.seqs; ++n) {
      const int64_t slot = a.state_indices.ptr<int32_t>()[n];
      named[static_cast<size_t>(slot)] = true;
      if (a.has_initial_state.ptr<int32_t>()[n] != 0) continue;
      for (int64_t i = 0; i < per_slot; ++i) {
        nan_pool[slot * per_slot + i] = std::numeric_limits<float>::quiet_NaN();
        zero_slots.tensors[1].data_as<float>()[slot * per_slot + i] = 0.f;
      }
    }
    const Tensor before = nan_slots.tensors[1].clone();
    impl(a, dims(a));
    impl(z, dims(z));
    EXPECT_EQ(test::count_changed_bytes(nan_slots.tensors[0], zero_slots.tensors[0]), 0) << "o";
    EXPECT_EQ(test::count_changed_bytes(nan_slots.tensors[1], zero_slots.tensors[1]), 0) << "state";
    auto slot_unchanged = [&](int64_t s) {
      return std::memcmp(nan_pool + s * per_slot, before.data_as<float>() + s * per_slot, 4 * per_slot) == 0;
    };
    for (int64_t s = 0; s < d.slots; ++s)
      if (!named[static_cast<size_t>(s)]) EXPECT_TRUE(slot_unchanged(s)) << "spare slot " << s;
    // Sequences 0 and 4 (no tokens, from their slots) leave them; sequence 1 (no tokens, no
    // initial state) leaves zeros.
    EXPECT_TRUE(slot_unchanged(a.state_indices.ptr<int32_t>()[0]));
    EXPECT_TRUE(slot_unchanged(a.state_indices.ptr<int32_t>()[4]));
    const int64_t slot1 = a.state_indices.ptr<int32_t>()[1];
    for (int64_t i = 0; i < per_slot; ++i) ASSERT_EQ(nan_pool[slot1 * per_slot + i], 0.f) << i;
  }
}

// Both ops' CPU backends are the reference: one function, two names.
TEST(GatedDelta, BothOpsComputeTheSameFunction) {
  const Json w = {{"seq_lens", {65, 3}}};
  OpCase chunk = make(w, "both"), rec = make(w, "both");
  test::expect_ok(DeviceType::cpu, chunk.as<ChunkGatedDeltaRuleArgs>());
  test::expect_ok(DeviceType::cpu, rec.as<FusedRecurrentGatedDeltaRuleArgs>());
  EXPECT_EQ(test::count_changed_bytes(chunk.tensors[0], rec.tensors[0]), 0);
  EXPECT_EQ(test::count_changed_bytes(chunk.tensors[1], rec.tensors[1]), 0);
}

template <class Args>
void check_errors() {
  using test::expect_invalid;
  const auto cpu = DeviceType::cpu;
  const OpCase c = make({{"seq_lens", {3, 2}}}, "errors");  // hk 2, hv 4, dk 16, dv 8, 4 slots
  const Args good = c.as<Args>();
  test::expect_ok(cpu, good);
  auto with = [&](auto edit) {
    Args a = good;
    edit(a);
    return a;
  };
  const Tensor q_f16 = Tensor::zeros({5, 2, 16}, DType::f16), q_i32 = Tensor::zeros({5, 2, 16}, DType::i32);
  const Tensor v3 = Tensor::zeros({5, 3, 8}, DType::bf16), o_bad = Tensor::zeros({5, 4, 9}, DType::bf16);
  const Tensor st_bad = Tensor::zeros({4, 4, 16, 9}, DType::f32), st_bf16 = Tensor::zeros({4, 4, 16, 8}, DType::bf16);
  const Tensor g_bf16 = Tensor::zeros({5, 4}, DType::bf16), g_short = Tensor::zeros({4, 4}, DType::f32);
  const Tensor beta_f16 = Tensor::zeros({5, 4}, DType::f16), cu_i64 = Tensor::zeros({3}, DType::i64);
  const Tensor cu_bad0 = i32({1, 3, 5}), cu_down = i32({0, 4, 3}), cu_short = i32({0, 3, 4});
  const Tensor slots_out = i32({0, 4}), slots_neg = i32({-1, 0}), slots_dup = i32({2, 2}), slots_1 = i32({0});
  const Tensor flags_1 = i32({1});
  expect_invalid(cpu, with([&](Args& a) { a.q = q_i32.view(); }), "q must be one of bf16/f16/f32");
  expect_invalid(cpu, with([&](Args& a) { a.k = q_f16.view(); }), "k must be bf16");
  expect_invalid(cpu, with([&](Args& a) { a.v = v3.view(); }), "value heads (3) must be a multiple");
  expect_invalid(cpu, with([&](Args& a) { a.o = o_bad.view(); }), "o must be [5, 4, 8]");
  expect_invalid(cpu, with([&](Args& a) { a.state = st_bad.view(); }), "state must be [num_slots, 4, 16, 8]");
  expect_invalid(cpu, with([&](Args& a) { a.state = st_bf16.view(); }), "state must be f32");
  expect_invalid(cpu, with([&](Args& a) { a.g = g_bf16.view(); }), "g must be f32");
  expect_invalid(cpu, with([&](Args& a) { a.g = g_short.view(); }), "g must be [5, 4]");
  expect_invalid(cpu, with([&](Args& a) { a.beta = beta_f16.view(); }), "beta must be f32 or bf16");
  expect_invalid(cpu, with([&](Args& a) { a.cu_seqlens = cu_i64.view(); }), "cu_seqlens must be i32");
  expect_invalid(cpu, with([&](Args& a) { a.cu_seqlens = cu_bad0.view(); }), "cu_seqlens[0] must be 0");
  expect_invalid(cpu, with([&](Args& a) { a.cu_seqlens = cu_down.view(); }), "cu_seqlens must not decrease");
  expect_invalid(cpu, with([&](Args& a) { a.cu_seqlens = cu_short.view(); }), "cu_seqlens[N] must be the token count 5");
  expect_invalid(cpu, with([&](Args& a) { a.state_indices = slots_1.view(); }), "state_indices must be [2]");
  expect_invalid(cpu, with([&](Args& a) { a.state_indices = slots_out.view(); }), "outside the state pool of 4 slots");
  expect_invalid(cpu, with([&](Args& a) { a.state_indices = slots_neg.view(); }), "state_indices[0] = -1");
  expect_invalid(cpu, with([&](Args& a) { a.state_indices = slots_dup.view(); }), "slots must be distinct");
  expect_invalid(cpu, with([&](Args& a) { a.has_initial_state = flags_1.view(); }), "has_initial_state must be [2]");
  expect_invalid(cpu, with([&](Args& a) { a.scale = -1.f; }), "scale must be > 0");
  expect_invalid(cpu, with([&](Args& a) { a.use_qk_l2norm_in_kernel = 2; }), "use_qk_l2norm_in_kernel must be 0 or 1");
  expect_invalid(cpu, with([&](Args& a) { a.o = a.q; }), "o must be [5, 4, 8]");
  expect_invalid(cpu, with([&](Args& a) {
                   TensorView k = a.k;
                   k.strides[1] = 32;  // heads not packed
                   k.strides[0] = 64;
                   a.k = k;
                 }),
                 "k must have packed heads");
}

TEST(GatedDeltaErrors, BadArgumentsAreClearErrors) {
  check_errors<ChunkGatedDeltaRuleArgs>();
  check_errors<FusedRecurrentGatedDeltaRuleArgs>();
}

TEST(GatedDeltaErrors, CudaImplementationsRejectHostTensors) {
  if (!OpRegistry::global().baseline(A::kName, DeviceType::cuda)) GTEST_SKIP() << "CPU-only build";
  const OpCase c = make({{"seq_lens", {3, 2}}}, "errors");
  test::expect_invalid(DeviceType::cuda, c.as<ChunkGatedDeltaRuleArgs>(), "must be on cuda");
  test::expect_invalid(DeviceType::cuda, c.as<FusedRecurrentGatedDeltaRuleArgs>(), "must be on cuda");
}

}  // namespace
}  // namespace fk
