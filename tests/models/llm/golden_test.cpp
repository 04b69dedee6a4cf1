// The engine on the CPU backend against HF transformers goldens of every family.
#include "models/llm/golden_check.h"  // tests/models/llm/

namespace fk::engine::test {
namespace {

class GoldenCpu : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenCpu, LogitsAndGreedyTokensMatchTransformers) { check_family(GetParam(), DeviceType::cpu); }

INSTANTIATE_TEST_SUITE_P(Families, GoldenCpu,
                         ::testing::Values("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "mixtral",
                                           "qwen3_moe", "olmoe", "qwen2_moe"),
                         // Named by family: the model registry names these tests as golden tests.
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace fk::engine::test
