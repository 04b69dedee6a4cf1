// The variants of linear (linear_variants.h). Each is an alternative to a default path
// whose measurements are in bench/results/h100/ (linear_*.json): kept selectable so that
// the comparison can be repeated on another GPU or model.
#include "ops/linear/linear_variants.h"

#include <array>
#include <string>

#include "fk/op_registry.h"
#include "fk/status.h"
#include "ops/common/variant_flag.h"
#include "ops/linear/skinny_gemm.h"

namespace fk::ops {
namespace {

constexpr const char* kOp = "linear";

FK_REGISTER_VARIANT("linear", "no_autotune", "cuBLASLt's first heuristic choice for decode-sized problems, untimed");
FK_REGISTER_VARIANT("linear", "no_skinny", "decode shapes on cuBLASLt too (no skinny_gemm, no small_m_gemm)");
FK_REGISTER_VARIANT("linear", "no_small_m",
                    "no small_m_gemm: 5-16 rows on cuBLASLt, narrow weights at 3-4 rows stay on skinny_gemm");
FK_REGISTER_VARIANT("linear", "skinny_max_rows_0", "skinny_gemm for no rows: 1-4 rows on small_m_gemm");
FK_REGISTER_VARIANT("linear", "skinny_max_rows_1", "skinny_gemm up to 1 row, 2-4 rows on small_m_gemm");
FK_REGISTER_VARIANT("linear", "skinny_max_rows_2", "skinny_gemm up to 2 rows, 3-4 rows on small_m_gemm");
FK_REGISTER_VARIANT("linear", "skinny_max_rows_3", "skinny_gemm up to 3 rows, 4 rows on small_m_gemm");
static_assert(kSkinnyMaxRows == 4, "one skinny_max_rows_<n> variant per n below kSkinnyMaxRows");

const VariantFlag no_autotune(kOp, "no_autotune");
const VariantFlag no_skinny(kOp, "no_skinny");
const VariantFlag no_small_m(kOp, "no_small_m");
const std::array<VariantFlag, kSkinnyMaxRows> skinny_max_rows{
    VariantFlag(kOp, "skinny_max_rows_0"), VariantFlag(kOp, "skinny_max_rows_1"),
    VariantFlag(kOp, "skinny_max_rows_2"), VariantFlag(kOp, "skinny_max_rows_3")};

}  // namespace

LinearPaths linear_paths() {
  LinearPaths p;
  p.autotune = !no_autotune.on();
  p.skinny = !no_skinny.on();
  p.small_m = !no_small_m.on();
  p.skinny_max_rows = kSkinnyMaxRows;
  int64_t chosen = -1;
  for (int64_t n = 0; n < kSkinnyMaxRows; ++n) {
    if (!skinny_max_rows[static_cast<size_t>(n)].on()) continue;
    if (chosen >= 0)
      FK_FAIL(FK_ERR_INVALID_ARGUMENT, "linear: variants skinny_max_rows_", chosen, " and skinny_max_rows_", n,
              " are both selected; select one");
    chosen = n;
  }
  if (chosen >= 0) p.skinny_max_rows = chosen;
  return p;
}

}  // namespace fk::ops
