// rms_norm that crashes the process when the engine calls it with a long enough batch:
// the candidate's engine run dies, the baseline run and the evaluation go on.
#include <csignal>

#include "fk/ops/norm.h"

namespace {

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  if (a.input.shape[0] > 2) std::raise(SIGSEGV);
  return FK_ERR_UNSUPPORTED;
}

}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
