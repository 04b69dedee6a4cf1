// OpenFold3's Pairformer stack on CUDA: the tiny config against the CPU backend with the
// same Philox weights (padded structures included), the golden data (when committed), and
// the production preset (48 blocks at OpenFold3's widths) on a 384-token crop holding a
// 350-token structure: finite outputs and the stack's time, printed.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "fk/element.h"
#include "fk/random.h"
#include "fk/runtime.h"
#include "models/registry.h"
#include "models/science/openfold3/openfold3_model.h"
#include "models/science/openfold3_golden_util.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk::models::science {
namespace {

struct Inputs {
  Tensor s, z, single_mask, pair_mask;
};

// Host inputs: random s and z, the first `real` tokens of each structure real.
Inputs make_inputs(const OpenFold3Config& c, int64_t b, int64_t n, int64_t real, DType dt, uint64_t seed) {
  Inputs x{Tensor::empty({b, n, c.c_s}, dt), Tensor::empty({b, n, n, c.c_z}, dt), Tensor::zeros({b, n}, dt),
           Tensor::zeros({b, n, n}, dt)};
  fill_uniform(x.s, seed, 1, -1.f, 1.f);
  fill_uniform(x.z, seed, 2, -1.f, 1.f);
  for (int64_t i = 0; i < b; ++i)
    for (int64_t t = 0; t < real; ++t) {
      set(x.single_mask.view(), 1.0, i, t);
      for (int64_t u = 0; u < real; ++u) set(x.pair_mask.view(), 1.0, i, t, u);
    }
  return x;
}

// Runs `model` on the inputs moved to its device; host copies of s and z.
std::pair<Tensor, Tensor> run(OpenFold3Model& model, const Inputs& host, Device dev) {
  const Tensor s = host.s.to(dev), z = host.z.to(dev), sm = host.single_mask.to(dev), pm = host.pair_mask.to(dev);
  StepInputs in;
  in.tensors = {{"single", s.view()}, {"pair", z.view()}, {"single_mask", sm.view()}, {"pair_mask", pm.view()}};
  model.plan(in, nullptr);
  model.forward(in, nullptr);
  rt::device_synchronize();
  auto host_copy = [](const TensorView& v) {
    Tensor t = Tensor::empty(Shape(v.shape, v.shape + v.rank), v.dtype);
    rt::memcpy_sync(t.data(), Device::cpu(), v.data, v.device, static_cast<size_t>(v.span_bytes()));
    return t;
  };
  return {host_copy(model.single_output()), host_copy(model.pair_output())};
}

TEST(OpenFold3Gpu, TinyMatchesTheCpuBackend) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("OpenFold3Gpu.Tiny");
  const std::unique_ptr<Model> mc = create_model("tiny-openfold3"), mg = create_model("tiny-openfold3");
  auto& cpu = dynamic_cast<OpenFold3Model&>(*mc);
  auto& gpu = dynamic_cast<OpenFold3Model&>(*mg);
  LoadOptions lo;
  lo.dtype = DType::bf16;
  lo.seed = seed;
  lo.max_seqs = 2;
  cpu.load(lo);
  lo.device = Device::cuda();
  gpu.load(lo);
  const int64_t N = 20, L = 17;
  const Inputs x = make_inputs(cpu.config(), 2, N, L, DType::bf16, seed);
  const auto [sc, zc] = run(cpu, x, Device::cpu());
  const auto [sg, zg] = run(gpu, x, Device::cuda());
  for (const auto& [name, a, b] : {std::tuple{"single", sc, sg}, std::tuple{"pair", zc, zg}}) {
    // Real tokens only. Each backend is within about 1.6% (relative L2) and 3% (worst element
    // of the largest magnitude) of the double-precision parts (openfold3_test); their
    // difference, rounded in a different order, is bounded by about twice that.
    const bool pair = std::string(name) == "pair";
    double worst = 0, scale = 0, d2 = 0, n2 = 0;
    const int64_t per_token = a.numel() / (2 * N) / (pair ? N : 1);
    for (int64_t i = 0; i < a.numel(); ++i) {
      const int64_t token = i / per_token;
      const int64_t t0 = pair ? (token / N) % N : token % N, t1 = pair ? token % N : 0;
      if (t0 >= L || t1 >= L) continue;
      const double r = load_element(a.view().element_ptr(i), a.dtype()), g = load_element(b.view().element_ptr(i), b.dtype());
      worst = std::max(worst, std::abs(g - r));
      scale = std::max(scale, std::abs(r));
      d2 += (g - r) * (g - r), n2 += r * r;
    }
    EXPECT_LE(std::sqrt(d2 / n2), 5e-2) << name;
    EXPECT_LE(worst, 1.5e-1 * scale) << name << ": worst " << worst << " of " << scale;
  }
}

TEST(OpenFold3Gpu, GoldenOnCuda) {
  FK_REQUIRE_GPU();
  if (!golden::have_data())
    GTEST_SKIP() << "no golden data in " << golden::data_dir().string() << " (made by: " << golden::kScript << ")";
  golden::check(Device::cuda(), DType::bf16, 3e-2);
}

TEST(OpenFold3Gpu, ProductionPresetRuns) {
  FK_REQUIRE_GPU();
  const std::unique_ptr<Model> m = create_model("openfold3");
  auto& model = dynamic_cast<OpenFold3Model&>(*m);
  LoadOptions lo;
  lo.device = Device::cuda();
  lo.dtype = DType::bf16;
  lo.seed = test::seed_for("OpenFold3Gpu.Production");
  lo.max_seqs = 1;
  model.load(lo);
  const Inputs x = make_inputs(model.config(), 1, 384, 350, DType::bf16, lo.seed);
  run(model, x, Device::cuda());  // warm-up
  const auto t0 = std::chrono::steady_clock::now();
  const auto [s, z] = run(model, x, Device::cuda());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(test::count_nonfinite(s), 0);
  EXPECT_EQ(test::count_nonfinite(z), 0);
  std::printf("[ perf ] openfold3 Pairformer stack: 48 blocks, 1 x 384 tokens (350 real), bf16: %.1f ms\n", ms);
}

}  // namespace
}  // namespace fk::models::science
