// MobileNetV4 against timm (tests/data/models/vision/make_mobilenetv4_goldens.py): the tiny
// config's pooled features and logits on the CPU (mobilenetv4_golden_util.h says what
// agreement means and why).
#include <gtest/gtest.h>

#include "models/vision/mobilenetv4_golden_util.h"

namespace fk::models::vision {
namespace {

TEST(MobileNetV4Golden, TinyMatchesTimm) {
  const std::filesystem::path dir = mobilenetv4_golden::data_dir();
  if (!std::filesystem::exists(dir / "golden.safetensors"))
    GTEST_SKIP() << "no golden data in " << dir.string()
                 << " (made by: python3 tests/data/models/vision/make_mobilenetv4_goldens.py)";
  mobilenetv4_golden::check_tiny(Device::cpu());
}

}  // namespace
}  // namespace fk::models::vision
