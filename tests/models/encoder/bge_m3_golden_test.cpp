// BGE-M3 (XLM-RoBERTa with its dense, sparse and ColBERT heads) on the CPU against
// transformers' outputs of a tiny random checkpoint (models/encoder/golden_check.h).
#include "models/encoder/golden_check.h"

namespace fk {
namespace {

class EncoderGoldenCpu : public testing::TestWithParam<std::string> {};

TEST_P(EncoderGoldenCpu, BgeM3MatchesTransformers) { test::check_encoder_golden(GetParam(), Device::cpu()); }

INSTANTIATE_TEST_SUITE_P(Encoders, EncoderGoldenCpu, testing::Values("xlm_roberta"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace fk
