// Qwen3-VL's vision tower on the CUDA backend against the CPU backend with the same weights
// (Philox draws the same values on both): the tiny config on two images (one a 2-frame
// clip), and two blocks at Qwen3-VL-8B's width (16 heads of 72: varlen_attention and the
// rope at head dim 72, the 4608-wide mergers) on a 16x16-patch image and a 2-frame 8x8 clip;
// then the timing of the 8B tower's forward on one 1024^2 image (4096 patches), printed.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "fk/element.h"
#include "fk/random.h"
#include "fk/runtime.h"
#include "models/vlm/qwen3_vl/presets.h"
#include "models/vlm/qwen3_vl/vision_tower.h"
#include "support/test_seed.h"

namespace fk::models::vlm {
namespace {

double relative_error(const TensorView& cuda_view, const TensorView& cpu) {
  Tensor host = Tensor::empty({cuda_view.shape[0], cuda_view.shape[1]}, cuda_view.dtype);
  rt::memcpy_sync(host.data(), Device::cpu(), cuda_view.data, cuda_view.device, static_cast<size_t>(cuda_view.nbytes()));
  double num = 0, den = 0;
  for (int64_t i = 0; i < cpu.shape[0]; ++i)
    for (int64_t j = 0; j < cpu.shape[1]; ++j) {
      const double g = get(host.view(), i, j), e = get(cpu, i, j);
      EXPECT_TRUE(std::isfinite(g)) << i << ", " << j;
      num += (g - e) * (g - e), den += e * e;
    }
  return std::sqrt(num / den);
}

void compare_backends(const Qwen3VLVisionConfig& c, const std::vector<PatchGrid>& grids, const std::string& label) {
  SCOPED_TRACE(label);
  const uint64_t seed = test::seed_for("qwen3_vl_vision_gpu" + label);
  int64_t patches = 0;
  for (const PatchGrid& g : grids) patches += g.patches();
  Tensor pixels = Tensor::empty({patches, c.patch_dim()}, DType::bf16);
  fill_uniform(pixels.view(), seed, 99999, -1.f, 1.f);
  const Tensor pixels_d = pixels.to(Device::cuda());
  Qwen3VLVisionTower cpu(c, random_qwen3_vl_vision_weights(c, DType::bf16, Device::cpu(), seed, nullptr), DType::bf16,
                         Device::cpu(), patches, nullptr);
  Qwen3VLVisionTower gpu(c, random_qwen3_vl_vision_weights(c, DType::bf16, Device::cuda(), seed, nullptr), DType::bf16,
                         Device::cuda(), patches, nullptr);
  const TensorView want = cpu.forward(pixels.view(), grids, nullptr);
  const TensorView got = gpu.forward(pixels_d.view(), grids, nullptr);
  rt::device_synchronize();
  // Both round activations to bf16 at the same points; fp32 vs double accumulation and
  // different rounding of ties drift by a few bf16 ulps over the blocks.
  EXPECT_LT(relative_error(got, want), 0.02) << "merged";
  for (size_t k = 0; k < cpu.num_deepstack(); ++k)
    EXPECT_LT(relative_error(gpu.deepstack(k), cpu.deepstack(k)), 0.02) << "deepstack " << k;
}

TEST(Qwen3VLVisionGpu, TinyMatchesCpu) {
  FK_REQUIRE_GPU();
  compare_backends(parse_qwen3_vl_vision_config(kTinyQwen3VLConfig, "tiny"), {{1, 4, 6}, {2, 2, 2}}, "tiny");
}

TEST(Qwen3VLVisionGpu, EightBWidthTwoBlocksMatchCpu) {
  FK_REQUIRE_GPU();
  Qwen3VLVisionConfig c = parse_qwen3_vl_vision_config(kQwen3VL8BConfig, "8b");
  c.depth = 2;
  c.deepstack_visual_indexes = {0};
  compare_backends(c, {{1, 16, 16}, {2, 8, 8}}, "8b width");
}

TEST(Qwen3VLVisionGpu, EightBForwardTime) {
  FK_REQUIRE_GPU();
  const Qwen3VLVisionConfig c = parse_qwen3_vl_vision_config(kQwen3VL8BConfig, "8b");
  const std::vector<PatchGrid> grids = {{1, 64, 64}};  // one 1024 x 1024 image
  Tensor pixels = Tensor::empty({4096, c.patch_dim()}, DType::bf16, Device::cuda());
  fill_uniform(pixels.view(), 1, 1, -1.f, 1.f);
  Qwen3VLVisionTower tower(c, random_qwen3_vl_vision_weights(c, DType::bf16, Device::cuda(), 1, nullptr), DType::bf16,
                           Device::cuda(), 4096, nullptr);
  tower.forward(pixels.view(), grids, nullptr);  // warm-up (GEMM set-up)
  rt::device_synchronize();
  const int iters = 5;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) tower.forward(pixels.view(), grids, nullptr);
  rt::device_synchronize();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iters;
  std::printf("qwen3-vl-8b vision tower, one 1024^2 image (4096 patches): %.2f ms per forward (host layout included)\n", ms);
  const TensorView merged = tower.forward(pixels.view(), grids, nullptr);
  rt::device_synchronize();
  EXPECT_EQ(merged.shape[0], 1024);
  EXPECT_EQ(merged.shape[1], 4096);
}

}  // namespace
}  // namespace fk::models::vlm
