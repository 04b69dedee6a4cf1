// ConvNeXt V2 against transformers (tests/data/models/vision/make_convnextv2_goldens.py): the
// tiny config's pooled features (after the final LayerNorm) and logits on the CPU
// (classifier_golden_util.h says what agreement means and why).
#include <gtest/gtest.h>

#include "models/vision/classifier_golden_util.h"

namespace fk::models::vision {
namespace {

TEST(ConvNextV2Golden, TinyMatchesTransformers) {
  const std::filesystem::path dir = classifier_golden::data_dir(classifier_golden::kConvNextV2);
  if (!std::filesystem::exists(dir / "golden.safetensors"))
    GTEST_SKIP() << "no golden data in " << dir.string()
                 << " (made by: python3 tests/data/models/vision/make_convnextv2_goldens.py)";
  classifier_golden::check_tiny(Device::cpu(), classifier_golden::kConvNextV2);
}

}  // namespace
}  // namespace fk::models::vision
