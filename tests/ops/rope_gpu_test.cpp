// The rope CUDA baselines: the cache builder against the CPU one, production shapes and a
// sweep over the vector kernel's geometries against the f64 oracle, strided q/k views of a
// fused qkv buffer (vector and scalar kernels), and memory safety on bad positions.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "harness/check/op_check.h"
#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/rope.h"
#include "fk/rope_cache.h"
#include "fk/runtime.h"
#include "ops/rope_test_util.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::RopeStyle;
using test::at;

RopeConfig llama31() {
  RopeConfig c;
  c.theta = 500000.0;
  c.scaling = RopeScalingType::llama3;
  c.factor = 8.0;
  c.low_freq_factor = 1.0;
  c.high_freq_factor = 4.0;
  c.original_max_position_embeddings = 8192;
  return c;
}

RopeConfig yarn(double theta, double factor, double original, double mscale, double mscale_all_dim, bool truncate) {
  RopeConfig c;
  c.theta = theta;
  c.scaling = RopeScalingType::yarn;
  c.factor = factor;
  c.original_max_position_embeddings = original;
  c.mscale = mscale;
  c.mscale_all_dim = mscale_all_dim;
  c.yarn_truncate = truncate ? 1 : 0;
  return c;
}

TEST(RopeGpu, CacheBuilderMatchesCpu) {
  FK_REQUIRE_GPU();
  RopeConfig linear;
  linear.scaling = RopeScalingType::linear;
  linear.factor = 4.0;
  struct Case {
    const char* name;
    RopeConfig config;
    int64_t max_pos, rot_dim;
  };
  const std::vector<Case> cases = {
      {"none", RopeConfig{}, 4096, 128},
      {"none_partial", RopeConfig{}, 777, 32},
      {"linear", linear, 2048, 64},
      {"llama3", llama31(), 131072, 128},
      {"yarn_qwen3", yarn(1e6, 4.0, 32768, 0, 0, true), 131072, 128},
      {"yarn_deepseek", yarn(1e4, 40.0, 4096, 1.0, 0.8, false), 16384, 64},
  };
  for (const Case& c : cases) {
    for (DType dt : {DType::f32, DType::bf16}) {
      const Tensor cpu = make_rope_cos_sin_cache(c.config, c.max_pos, c.rot_dim, dt, Device::cpu());
      const Tensor gpu = make_rope_cos_sin_cache(c.config, c.max_pos, c.rot_dim, dt, Device::cuda(0)).to(Device::cpu());
      // Both round a double value once. libm's and CUDA's double pow / sin / cos may differ
      // in the last bits (the angle by ~1e-16 relative, up to ~1e-11 rad at 131k), which
      // moves the rounded value by one ulp only next to a rounding boundary: rarely.
      const double ulp = dt == DType::f32 ? std::ldexp(1.0, -23) : std::ldexp(1.0, -7);
      int64_t differ = 0;
      double worst = 0;
      for (int64_t i = 0; i < cpu.numel(); ++i) {
        const double d = std::fabs(at(cpu, i) - at(gpu, i));
        worst = std::max(worst, d);
        differ += d != 0;
      }
      EXPECT_LE(worst, 1.5 * ulp) << c.name << " " << dtype_name(dt);
      EXPECT_LE(differ, cpu.numel() / 100 + 1) << c.name << " " << dtype_name(dt);
    }
  }
}

void expect_passes(const char* op, const Json& w, uint64_t seed) {
  const OpDef& def = OpRegistry::global().def(op);
  const auto r = bench::check_op(def, w, seed, DeviceType::cuda);
  EXPECT_TRUE(r.passed) << op << " " << w.dump() << " seed " << seed << ": " << r.message;
}

TEST(RopeGpu, BenchShapesMatchOracle) {
  FK_REQUIRE_GPU();
  for (const char* op : {"rotary_embedding", "qk_norm_rope"}) {
    const OpDef& def = OpRegistry::global().def(op);
    for (const Json& w : def.bench_workloads) expect_passes(op, w, test::seed_for(std::string("bench_") + op));
  }
}

TEST(RopeGpu, KernelGeometrySweepMatchesOracle) {
  FK_REQUIRE_GPU();
  // Shapes that exercise 1, 2 and 4 slots per lane, group sizes 4..32, several tokens per
  // block, many heads, the 8-byte cache loads (gptj with an f32 or f16 cache), and the
  // scalar kernel beyond 128 slots.
  const std::vector<Json> rope = {
      {{"tokens", 3}, {"q_heads", 2}, {"kv_heads", 1}, {"head_size", 512}, {"dtype", "f32"}},
      {{"tokens", 3}, {"q_heads", 1}, {"kv_heads", 1}, {"head_size", 1024}, {"dtype", "f32"}},
      {{"tokens", 2}, {"q_heads", 1}, {"kv_heads", 1}, {"head_size", 1024}, {"dtype", "f32"}, {"style", "gptj"}},
      {{"tokens", 5}, {"q_heads", 2}, {"kv_heads", 2}, {"head_size", 64}, {"dtype", "f32"}, {"style", "gptj"}},
      {{"tokens", 300}, {"q_heads", 1}, {"kv_heads", 1}, {"head_size", 64}},
      {{"tokens", 70}, {"q_heads", 3}, {"kv_heads", 0}, {"head_size", 32}, {"dtype", "f16"}},
      {{"tokens", 9}, {"q_heads", 96}, {"kv_heads", 16}, {"head_size", 128}},
      {{"tokens", 9}, {"q_heads", 64}, {"kv_heads", 8}, {"head_size", 256}, {"rot_dim", 64}, {"style", "gptj"}},
      {{"tokens", 11}, {"q_heads", 8}, {"kv_heads", 1}, {"head_size", 128}, {"dtype", "f16"}, {"cache_dtype", "f16"},
       {"style", "gptj"}},
      {{"tokens", 11}, {"q_heads", 28}, {"kv_heads", 4}, {"head_size", 128}, {"cache_dtype", "bf16"}},
      {{"tokens", 6}, {"q_heads", 16}, {"kv_heads", 16}, {"head_size", 80}, {"rot_dim", 32}, {"dtype", "f16"}},
      {{"tokens", 129}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"max_pos", 131072}, {"pos_dtype", "i32"},
       {"layout", "3d"}},
      // Decode steps: up to 64 tokens, a token's heads split over blocks (Llama's 40: 2).
      {{"tokens", 1}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}},
      {{"tokens", 64}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}},
      {{"tokens", 65}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}},
  };
  const std::vector<Json> qk_norm = {
      {{"tokens", 3}, {"q_heads", 2}, {"kv_heads", 1}, {"head_size", 512}, {"rot_dim", 128}},
      {{"tokens", 3}, {"q_heads", 2}, {"kv_heads", 1}, {"head_size", 512}, {"dtype", "f32"}},
      {{"tokens", 4}, {"q_heads", 4}, {"kv_heads", 2}, {"head_size", 256}, {"rot_dim", 64}, {"style", "gptj"}},
      {{"tokens", 300}, {"q_heads", 1}, {"kv_heads", 1}, {"head_size", 64}, {"dtype", "f16"}},
      {{"tokens", 9}, {"q_heads", 40}, {"kv_heads", 8}, {"head_size", 128}, {"eps", 1e-5}},
      {{"tokens", 7}, {"q_heads", 8}, {"kv_heads", 2}, {"head_size", 128}, {"rot_dim", 64}, {"dtype", "f16"},
       {"cache_dtype", "f16"}, {"style", "gptj"}},
      {{"tokens", 6}, {"q_heads", 16}, {"kv_heads", 4}, {"head_size", 80}, {"rot_dim", 40}},  // scalar: 20 % 8 != 0
      {{"tokens", 5}, {"q_heads", 4}, {"kv_heads", 2}, {"head_size", 2048}, {"dtype", "f32"}},  // scalar: 512 slots
      {{"tokens", 1}, {"q_heads", 32}, {"kv_heads", 4}, {"head_size", 128}},  // Qwen3-30B-A3B decode: 2 blocks
      {{"tokens", 2}, {"q_heads", 64}, {"kv_heads", 4}, {"head_size", 128}, {"dtype", "f16"}},  // 3 blocks
  };
  for (size_t i = 0; i < rope.size(); ++i) expect_passes("rotary_embedding", rope[i], test::seed_for("sweep_rope", i));
  for (size_t i = 0; i < qk_norm.size(); ++i) expect_passes("qk_norm_rope", qk_norm[i], test::seed_for("sweep_qk", i));
}

// q/k views of a fused qkv buffer on the device against the CPU reference run on an f64
// copy of the same buffer (the oracle). offset 1 shifts every view by one element, which
// breaks 16-byte alignment and sends the call to the scalar kernel.
struct FusedCase {
  bool qk_norm = false;
  RopeStyle style = RopeStyle::neox;
  bool rank3 = false;
  int64_t offset = 0;
  DType dtype = DType::bf16;
  int64_t rot_dim = 128;
};

void run_fused(const FusedCase& fc, std::vector<int64_t> positions = {}) {
  constexpr int64_t T = 37, Hq = 32, Hk = 8, D = 128, max_pos = 4096;
  const int64_t W = (Hq + 2 * Hk) * D;
  const std::string what = concat(fc.qk_norm ? "qk_norm_rope " : "rotary_embedding ", ops::rope_style_name(fc.style),
                                  fc.rank3 ? " 3d" : " 2d", " offset ", fc.offset, " ", dtype_name(fc.dtype),
                                  " rot ", fc.rot_dim);
  const uint64_t seed = test::seed_for("fused_" + what);
  const Tensor qkv = test::random_host({T, W + 1}, fc.dtype, seed, 1);  // +1 column: room for the offset
  Tensor pos = Tensor::empty({T}, DType::i64);
  fill_int(pos.view(), seed, 2, 0, max_pos);
  for (size_t i = 0; i < positions.size(); ++i) store_element(pos.view().element_ptr(int64_t(i)), DType::i64, double(positions[i]));
  const Tensor cache = test::random_host({max_pos, fc.rot_dim}, DType::f32, seed, 3, -1.f, 1.f);
  const Tensor qw = test::random_host({D}, fc.dtype, seed, 4, 0.5f, 1.5f), kw = test::random_host({D}, fc.dtype, seed, 5, 0.5f, 1.5f);

  auto run = [&](const Tensor& buffer, const Tensor& positions_host, Device dev) {
    const Tensor p = positions_host.to(dev), c = cache.to(dev), q_w = qw.to(dev), k_w = kw.to(dev);
    const test::FusedQkv v = test::fused_views(buffer, Hq, Hk, D, fc.rank3, fc.offset);
    if (fc.qk_norm) {
      call_op(test::qk_norm_rope_args(p, v.q, v.k, q_w, k_w, c, D, fc.style, 1e-6f), dev.type, nullptr);
    } else {
      call_op(test::rope_args(p, v.q, v.k, c, D, fc.style), dev.type, nullptr);
    }
    if (dev.is_cuda()) rt::device_synchronize(0);
  };
  // The oracle rejects out-of-range positions: it gets position 0 for those tokens, whose
  // GPU results are instead required to equal the input.
  std::vector<bool> skip(T, false);
  Tensor oracle_pos = pos.clone();
  for (int64_t t = 0; t < T; ++t) {
    const int64_t p = get_index(pos.view(), t);
    skip[t] = p < 0 || p >= max_pos;
    if (skip[t]) store_element(oracle_pos.view().element_ptr(t), DType::i64, 0.0);
  }
  const Tensor oracle_buffer = test::to_dtype(qkv, DType::f64);
  run(oracle_buffer, oracle_pos, Device::cpu());

  const Tensor gpu = qkv.to(Device::cuda(0));
  run(gpu, pos, Device::cuda(0));
  const Tensor got = gpu.to(Device::cpu());

  const Tolerance tol = default_tolerance(fc.dtype);
  const int64_t written = fc.qk_norm ? D : fc.rot_dim;  // dims of a head the op may change
  int64_t bad = 0;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t col = 0; col < W + 1; ++col) {
      const int64_t rel = col - fc.offset;  // column within the q|k|v row
      const bool in_qk = rel >= 0 && rel < (Hq + Hk) * D && rel % D < written && !skip[t];
      const double g = get(got.view(), t, col), before = get(qkv.view(), t, col);
      if (in_qk) {
        const double ref = get(oracle_buffer.view(), t, col);
        if (!(std::fabs(g - ref) <= tol.atol + tol.rtol * std::fabs(ref)) && bad++ < 5)
          ADD_FAILURE() << what << ": t " << t << " col " << col << " got " << g << " expected " << ref;
      } else if (!(g == before || (std::isnan(g) && std::isnan(before)))) {
        if (bad++ < 5) ADD_FAILURE() << what << ": t " << t << " col " << col << " changed from " << before << " to " << g;
      }
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

TEST(RopeGpu, FusedQkvViewsMatchOracle) {
  FK_REQUIRE_GPU();
  for (bool qk_norm : {false, true})
    for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj})
      for (bool rank3 : {false, true})
        for (int64_t offset : {0, 1}) run_fused({qk_norm, style, rank3, offset, DType::bf16, 128});
  for (bool qk_norm : {false, true}) {
    run_fused({qk_norm, RopeStyle::neox, false, 0, DType::bf16, 64});  // partial rotary
    run_fused({qk_norm, RopeStyle::gptj, true, 1, DType::f16, 64});
    run_fused({qk_norm, RopeStyle::neox, false, 0, DType::f32, 128});
    run_fused({qk_norm, RopeStyle::gptj, false, 1, DType::f32, 32});
  }
}

TEST(RopeGpu, OutOfRangePositionsLeaveTheirTokensUnchanged) {
  FK_REQUIRE_GPU();
  // Tokens 1 and 2 at -1 and max_pos: the kernel must neither fault nor touch them; the
  // others are checked against the oracle as usual.
  for (bool qk_norm : {false, true})
    for (int64_t offset : {0, 1}) run_fused({qk_norm, RopeStyle::neox, false, offset, DType::bf16, 128}, {5, -1, 4096, 7});
}

TEST(RopeGpu, BadInputsAreClearErrors) {
  FK_REQUIRE_GPU();
  Tensor pos = Tensor::zeros({2}, DType::i64), q = Tensor::zeros({2, 16}, DType::bf16), k = Tensor::zeros({2, 8}, DType::bf16);
  Tensor cache = Tensor::zeros({4, 8}, DType::f32), cache16 = Tensor::zeros({4, 8}, DType::f16);
  auto expect_error = [](const ops::RotaryEmbeddingArgs& a, const std::string& needle) {
    try {
      call_op(a, DeviceType::cuda, nullptr);
      ADD_FAILURE() << "expected an error containing '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(test::rope_args(pos, q, k, cache, 8, RopeStyle::neox), "positions must be on cuda");
  const Device dev = Device::cuda(0);
  const Tensor dpos = pos.to(dev), dq = q.to(dev), dk = k.to(dev), dcache16 = cache16.to(dev);
  expect_error(test::rope_args(dpos, dq, dk, dcache16, 8, RopeStyle::neox), "cos_sin_cache must be f32 or bf16");
}

}  // namespace
}  // namespace fk
