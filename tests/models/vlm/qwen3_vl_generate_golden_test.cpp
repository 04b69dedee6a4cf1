// Qwen3-VL generating from an image on the CPU engine against transformers' tiny model
// (make_qwen3_vl_goldens.py; skips while its data is absent).
#include "models/vlm/qwen3_vl_generate_golden_check.h"  // tests/models/vlm/

namespace fk::engine::test {
namespace {

TEST(Qwen3VLGenerateGolden, LogitsAndGreedyTokensMatchTransformers) {
  FK_REQUIRE_QWEN3_VL_GENERATE_GOLDENS();
  check_qwen3_vl_generate_goldens(DeviceType::cpu);
}

}  // namespace
}  // namespace fk::engine::test
