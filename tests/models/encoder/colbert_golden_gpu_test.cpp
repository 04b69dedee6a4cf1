// ColBERTv2 on CUDA against transformers' outputs of a tiny random HF_ColBERT checkpoint:
// the same check as the CPU test (models/encoder/colbert_golden_check.h), every op on its
// CUDA baseline (the queries' [MASK] rows through varlen_attention's seqused_k).
#include "models/encoder/colbert_golden_check.h"
#include "support/test_seed.h"

namespace fk {
namespace {

TEST(ColbertGoldenGpu, MatchesTransformers) {
  FK_REQUIRE_GPU();
  test::check_colbert_golden(Device::cuda());
}

}  // namespace
}  // namespace fk
