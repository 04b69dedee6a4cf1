// MobileNetV4 against timm on the GPU: the golden check of mobilenetv4_golden_test.cpp with
// the model on CUDA (the conv2d, global_avg_pool and linear CUDA baselines).
#include <gtest/gtest.h>

#include "models/vision/classifier_golden_util.h"
#include "support/test_seed.h"

namespace fk::models::vision {
namespace {

void check_golden_on_gpu(const char* folder) {
  const std::filesystem::path dir = classifier_golden::data_dir(folder);
  if (!std::filesystem::exists(dir / "golden.safetensors")) GTEST_SKIP() << "no golden data in " << dir.string();
  classifier_golden::check_tiny(Device::cuda(), folder);
}

TEST(MobileNetV4Gpu, TinyMatchesTimm) {
  FK_REQUIRE_GPU();
  check_golden_on_gpu(classifier_golden::kSmall);
}

TEST(MobileNetV4Gpu, TinyMediumMatchesTimm) {
  FK_REQUIRE_GPU();
  check_golden_on_gpu(classifier_golden::kMedium);
}

}  // namespace
}  // namespace fk::models::vision
