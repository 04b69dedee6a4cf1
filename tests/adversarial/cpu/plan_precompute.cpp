// expect: REWARD_HACK
// Tries to do the work in its plan, which is never timed: the plan would compute the output
// for the inputs it sees and the call copy it out. A plan is given the plan inputs only
// (plan_guard.h): the input it reads points at a guard address, and the fault there is
// recorded as a REWARD_HACK before the worker dies. (Were it given the data, the timed
// calls' fresh inputs would still catch its stale outputs.)
#include <vector>

#include "common.h"

namespace {
std::vector<char> planned;
const void* planned_for = nullptr;

// Row by row: the output may be a strided view.
void copy_rows(const fk::TensorView& v, char* dst_or_null, const char* src_or_null) {
  const size_t row = static_cast<size_t>(v.shape[1] * v.element_size());
  for (int64_t r = 0; r < v.shape[0]; ++r) {
    char* p = static_cast<char*>(v.data) + r * v.strides[0] * v.element_size();
    if (dst_or_null) std::memcpy(dst_or_null + r * row, p, row);
    else std::memcpy(p, src_or_null + r * row, row);
  }
}

fk_status plan(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  adv::honest(a);
  planned.resize(static_cast<size_t>(a.out.nbytes()));
  copy_rows(a.out, planned.data(), nullptr);
  planned_for = a.out.data;
  return FK_OK;
}

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  if (a.out.data == planned_for && planned.size() == static_cast<size_t>(a.out.nbytes())) {
    copy_rows(a.out, nullptr, planned.data());
    return FK_OK;
  }
  adv::honest(a);
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
extern "C" __attribute__((visibility("default"))) fk_status fk_plan_rms_norm(const void* a, void* s) {
  return plan(a, s);
}
