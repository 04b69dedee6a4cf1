// ColBERTv2's encoding and MaxSim scoring on the CPU against transformers' outputs of a tiny
// random HF_ColBERT checkpoint (models/encoder/colbert_golden_check.h).
#include "models/encoder/colbert_golden_check.h"

namespace fk {
namespace {

class ColbertGoldenCpu : public testing::TestWithParam<std::string> {};

TEST_P(ColbertGoldenCpu, MatchesTransformers) { test::check_colbert_golden(Device::cpu()); }

INSTANTIATE_TEST_SUITE_P(Encoders, ColbertGoldenCpu, testing::Values("colbert"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace fk
