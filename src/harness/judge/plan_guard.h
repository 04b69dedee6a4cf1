// What a candidate's plan sees (judge point: "plan receives only the arguments the op's
// contract names as plan inputs"). A plan runs before the timed calls and is never timed:
// given the inputs' data it could do all the work there. So it gets the call's arguments
// with every tensor that is not a plan input (the host mirrors of the metadata, marked
// host_only, and the workspaces a plan fills) pointing into a guard region instead of its
// data: shapes, dtypes, strides and devices as they are, and present arguments still
// present, but any read of their elements faults. In a worker, a fault inside the guard is
// reported as a finding (REWARD_HACK, the plan read data it is not given) before the
// process dies.
#pragma once
#include <cstddef>
#include <vector>

#include "fk/op_registry.h"

namespace fk::bench {

// A copy of c's argument bytes for the candidate's plan: non-plan-input tensors with data
// point into the guard region (each its own page of it); absent ones stay absent.
std::vector<std::byte> plan_only_args(const OpDef& def, const OpCase& c);
// The same with the guard region of another process (a runner's, from its hello).
std::vector<std::byte> plan_only_args(const OpDef& def, const OpCase& c, std::byte* guard);
// Whether a tensor argument reaches a plan with its data (a plan input).
bool is_plan_input(const TensorArg& a);

// This process's guard region (reserved on first use).
std::byte* plan_guard();

// Whether addr lies in the guard region.
bool in_plan_guard(const void* addr);

// Installs a SIGSEGV/SIGBUS handler for the process: a fault at a guard address appends a
// REWARD_HACK finding line (the worker's findings.jsonl format) to findings_fd; any of
// these faults then ends the process with status 128 + the signal.
void report_plan_guard_faults(int findings_fd);

}  // namespace fk::bench
