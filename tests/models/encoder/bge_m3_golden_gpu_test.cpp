// BGE-M3 on CUDA against transformers' outputs of a tiny random checkpoint: the same check
// as the CPU test (models/encoder/golden_check.h), every op on its CUDA baseline.
#include "models/encoder/golden_check.h"
#include "support/test_seed.h"

namespace fk {
namespace {

class EncoderGoldenGpu : public testing::TestWithParam<std::string> {};

TEST_P(EncoderGoldenGpu, BgeM3MatchesTransformers) {
  FK_REQUIRE_GPU();
  test::check_encoder_golden(GetParam(), Device::cuda());
}

INSTANTIATE_TEST_SUITE_P(Encoders, EncoderGoldenGpu, testing::Values("xlm_roberta"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace fk
