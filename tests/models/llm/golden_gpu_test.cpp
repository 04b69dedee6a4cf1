// The engine on the CUDA backend (cuBLASLt GEMMs, FlashInfer attention, CUDA-graph decode)
// against the same HF transformers goldens as the CPU test.
#include "models/llm/golden_check.h"  // tests/models/llm/
#include "support/test_seed.h"

namespace fk::engine::test {
namespace {

class GoldenGpu : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenGpu, LogitsAndGreedyTokensMatchTransformers) {
  FK_REQUIRE_GPU();
  check_family(GetParam(), DeviceType::cuda);
}

INSTANTIATE_TEST_SUITE_P(Families, GoldenGpu,
                         ::testing::Values("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "mixtral",
                                           "qwen3_moe", "olmoe", "qwen2_moe"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace fk::engine::test
