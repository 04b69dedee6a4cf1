// ConvNeXt V2 against transformers on the GPU: the golden check of convnextv2_golden_test.cpp
// with the model on CUDA (the conv2d, layer_norm, linear, gelu, grn, add and global_avg_pool
// CUDA baselines).
#include <gtest/gtest.h>

#include "models/vision/classifier_golden_util.h"
#include "support/test_seed.h"

namespace fk::models::vision {
namespace {

TEST(ConvNextV2Gpu, TinyMatchesTransformers) {
  FK_REQUIRE_GPU();
  const std::filesystem::path dir = classifier_golden::data_dir(classifier_golden::kConvNextV2);
  if (!std::filesystem::exists(dir / "golden.safetensors")) GTEST_SKIP() << "no golden data in " << dir.string();
  classifier_golden::check_tiny(Device::cuda(), classifier_golden::kConvNextV2);
}

}  // namespace
}  // namespace fk::models::vision
