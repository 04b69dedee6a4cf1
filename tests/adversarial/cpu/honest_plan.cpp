// expect: PASSED
// Honest CPU candidate with a plan: the plan looks only at what a plan is given (shapes,
// dtypes, strides, the attributes) and picks the row count per block from them; the call
// does the work. A plan that reads no tensor data runs as before.
#include <algorithm>

#include "common.h"

namespace {

int64_t rows_per_block = 1;

fk_status plan(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  if (a.input.rank != 2 || a.out.rank != 2 || a.input.data == nullptr) return FK_ERR_INVALID_ARGUMENT;
  rows_per_block = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, a.input.shape[1]));
  return FK_OK;
}

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  const int64_t T = a.input.shape[0], H = a.input.shape[1];
  for (int64_t r0 = 0; r0 < T; r0 += rows_per_block)
    for (int64_t t = r0; t < std::min(T, r0 + rows_per_block); ++t) adv::row(a, t, H);
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
extern "C" __attribute__((visibility("default"))) fk_status fk_plan_rms_norm(const void* a, void* s) {
  return plan(a, s);
}
