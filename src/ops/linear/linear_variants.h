// The kernel variants of linear's CUDA baseline (`fk ops variants linear`) and what the
// selection means for its launch path. Plain C++, so that CPU builds list them and tests
// can check a selection's effect.
#pragma once
#include <cstdint>

namespace fk::ops {

struct LinearPaths {
  bool autotune = true;  // decode-sized cuBLASLt problems time the heuristic's top candidates
  bool skinny = true;    // decode shapes may take skinny_gemm / small_m_gemm at all
  bool small_m = true;   // small_m_gemm takes its share of decode shapes
  int64_t skinny_max_rows = 0;  // rows up to which skinny_gemm runs (kSkinnyMaxRows by default)
};

// The paths the current variant selection of linear asks for. Selecting two
// skinny_max_rows_<n> variants at once is an fk::Error. Asks the registry only when the
// selection changed since the last call.
LinearPaths linear_paths();

}  // namespace fk::ops
