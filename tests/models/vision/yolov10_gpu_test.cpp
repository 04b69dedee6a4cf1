// YOLOv10 on CUDA: the tiny model's raw head output matches its CPU run (same weights, same
// float16 images; both backends round each op once, so they differ by a few ulps per op),
// the production n preset runs at 640 x 640 with batch 2 and gives finite outputs whose
// per-image results equal the single-image run, and the golden check where its data is present.
#include <gtest/gtest.h>

#include <cmath>

#include "fk/random.h"
#include "fk/runtime.h"
#include "models/registry.h"
#include "models/vision/yolov10/yolov10_model.h"
#include "models/vision/yolov10_golden_util.h"
#include "support/test_seed.h"

namespace fk::models::vision {
namespace {

std::vector<double> run(const char* preset, Device device, const Tensor& host_images, uint64_t seed, int64_t max_images) {
  auto model = create_model(preset);
  LoadOptions o;
  o.device = device;
  o.dtype = DType::f16;
  o.seed = seed;
  o.max_seqs = max_images;
  model->load(o);
  const Tensor images = device.is_cpu() ? host_images : host_images.to(device);
  StepInputs in;
  in.tensors = {{"images", images.view()}};
  model->plan(in, nullptr);
  const TensorView raw = model->forward(in, nullptr);
  Tensor host = Tensor::empty(Shape(raw.shape, raw.shape + 3), raw.dtype);
  rt::memcpy_sync(host.data(), Device::cpu(), raw.data, raw.device, static_cast<size_t>(raw.nbytes()));
  return golden::doubles(host.view());
}

TEST(Yolov10Gpu, TinyMatchesCpu) {
  FK_REQUIRE_GPU();
  const uint64_t seed = fk::test::seed_for("Yolov10Gpu");
  Tensor images = Tensor::empty({2, 64, 64, 3}, DType::f16);
  fill_uniform(images, seed, 1, 0.0f, 1.0f);
  const std::vector<double> cpu = run("tiny-yolov10", Device::cpu(), images, seed, 2);
  const std::vector<double> gpu = run("tiny-yolov10", Device::cuda(0), images, seed, 2);
  ASSERT_EQ(cpu.size(), gpu.size());
  double err = 0, norm = 0;
  for (size_t i = 0; i < cpu.size(); ++i) err += (gpu[i] - cpu[i]) * (gpu[i] - cpu[i]), norm += cpu[i] * cpu[i];
  EXPECT_LT(std::sqrt(err / norm), 3e-3) << "seed " << seed;
}

TEST(Yolov10Gpu, NanoPresetRunsAndIsBatchInvariant) {
  FK_REQUIRE_GPU();
  const uint64_t seed = fk::test::seed_for("Yolov10GpuNano");
  Tensor images = Tensor::empty({2, 640, 640, 3}, DType::f16);
  fill_uniform(images, seed, 1, 0.0f, 1.0f);
  const std::vector<double> both = run("yolov10n", Device::cuda(0), images, seed, 2);
  for (double v : both) ASSERT_TRUE(std::isfinite(v));
  Tensor second = Tensor::empty({1, 640, 640, 3}, DType::f16);
  std::memcpy(second.data(), static_cast<const char*>(images.data()) + second.nbytes(), second.nbytes());
  const std::vector<double> alone = run("yolov10n", Device::cuda(0), second, seed, 2);
  const size_t per = both.size() / 2;
  double err = 0, norm = 0;
  for (size_t i = 0; i < per; ++i) err += (alone[i] - both[per + i]) * (alone[i] - both[per + i]), norm += alone[i] * alone[i];
  EXPECT_LT(std::sqrt(err / norm), 1e-3);
}

TEST(Yolov10Gpu, GoldenOnCuda) {
  FK_REQUIRE_GPU();
  if (!std::filesystem::exists(golden::data_dir() / "golden.safetensors"))
    GTEST_SKIP() << "no golden data (python3 tests/data/models/make_yolov10_goldens.py tests/data/models)";
  golden::check_tiny(Device::cuda(0));
}

}  // namespace
}  // namespace fk::models::vision
