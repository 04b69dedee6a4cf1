// Qwen3-VL's vision tower against transformers on the CUDA backend (the golden data of
// make_qwen3_vl_vision_goldens.py; skips while it is absent or without a GPU).
#include "models/vlm/qwen3_vl_golden_check.h"  // tests/models/vlm/
#include "support/test_seed.h"

namespace fk::models::vlm::test {
namespace {

TEST(Qwen3VLGoldenGpu, VisionTowerMatchesTransformersCuda) {
  FK_REQUIRE_GPU();
  FK_REQUIRE_QWEN3_VL_GOLDENS();
  check_qwen3_vl_vision_goldens(Device::cuda());
}

}  // namespace
}  // namespace fk::models::vlm::test
