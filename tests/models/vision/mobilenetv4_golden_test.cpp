// MobileNetV4 against timm (tests/data/models/vision/make_mobilenetv4_goldens.py): the tiny
// conv_small and conv_medium configs' pooled features and logits on the CPU
// (classifier_golden_util.h says what agreement means and why).
#include <gtest/gtest.h>

#include "models/vision/classifier_golden_util.h"

namespace fk::models::vision {
namespace {

void check_golden(const char* folder) {
  const std::filesystem::path dir = classifier_golden::data_dir(folder);
  if (!std::filesystem::exists(dir / "golden.safetensors"))
    GTEST_SKIP() << "no golden data in " << dir.string()
                 << " (made by: python3 tests/data/models/vision/make_mobilenetv4_goldens.py)";
  classifier_golden::check_tiny(Device::cpu(), folder);
}

TEST(MobileNetV4Golden, TinyMatchesTimm) { check_golden(classifier_golden::kSmall); }

// EdgeResidual (FusedIB) blocks and UIRs without depthwise convs, which conv_small lacks.
TEST(MobileNetV4Golden, TinyMediumMatchesTimm) { check_golden(classifier_golden::kMedium); }

}  // namespace
}  // namespace fk::models::vision
