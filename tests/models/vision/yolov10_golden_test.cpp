// YOLOv10 against the PyTorch reference written from the paper
// (tests/data/models/make_yolov10_goldens.py): the tiny config's raw head output, the
// decode and top-k of that output, and the engine's own detections. The weights come as
// 4-bit codes over each tensor's range; the test expands them into a float32 checkpoint of
// the upstream names and loads it as any checkpoint folder. Skips while the data is absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/status.h"
#include "models/registry.h"
#include "models/vision/yolov10/yolov10_detect.h"
#include "models/vision/yolov10/yolov10_model.h"
#include "models/vision/yolov10_golden_util.h"

namespace fk::models::vision {
namespace {

TEST(Yolov10Golden, TinyMatchesPyTorchReference) {
  const std::filesystem::path dir = golden::data_dir();
  if (!std::filesystem::exists(dir / "golden.safetensors"))
    GTEST_SKIP() << "no golden data in " << dir.string()
                 << " (made by: python3 tests/data/models/make_yolov10_goldens.py tests/data/models)";
  golden::check_tiny(Device::cpu());
}

}  // namespace
}  // namespace fk::models::vision
