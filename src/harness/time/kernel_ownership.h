// Whose kernels ran in a candidate's timed calls: a kernel whose mangled name the
// candidate's library does not define was launched by a library it called (cuBLAS through
// dlopen, the engine's own symbols) rather than written by it. The judge reports such
// kernels, and a task that forbids libraries fails the candidate on them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/time/kernel_trace.h"

namespace fk::bench {

// One timed call on the trace's clock: from before the call to a device synchronisation
// after it, so that everything the call started ends inside.
struct CallWindow {
  uint64_t from_ns = 0, to_ns = 0;
  bool candidate = false;  // the candidate's call (else the baseline's)
};

// The window a trace record started in (either side's), or null.
const CallWindow* window_of(const KernelRecord& record, const std::vector<CallWindow>& windows);

// The kernels that started inside a candidate's window and are not among `own_functions`
// (sorted: defined_functions() of its library), sorted and unique.
std::vector<std::string> kernels_not_its_own(const std::vector<KernelRecord>& records,
                                             const std::vector<CallWindow>& windows,
                                             const std::vector<std::string>& own_functions);

}  // namespace fk::bench
