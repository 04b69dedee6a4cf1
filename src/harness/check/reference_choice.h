// Which reference a workload's outputs are checked against. The CPU f64 oracle when the
// workload's cost is within the oracle budgets; above them, on the CUDA backend, the op's
// high-precision GPU reference (OpRegistry::gpu_reference) when it has one; else the
// baseline's own outputs, the weakest check (its error is unknown, so the candidate's
// error cannot be bounded relative to it).
#pragma once
#include <string_view>

#include "harness/judge/evaluate.h"

namespace fk::bench {

enum class ReferenceKind { oracle, gpu_oracle, baseline };

// "oracle", "gpu_oracle" or "baseline": the workload result's `reference` field.
std::string_view reference_name(ReferenceKind kind);

// True for the double-precision references (CPU or GPU): the baseline's error against
// them sets the candidate's precision bound.
inline bool is_oracle(ReferenceKind kind) { return kind != ReferenceKind::baseline; }

ReferenceKind choose_reference(const OpCost& cost, const EvalConfig& cfg, bool has_gpu_reference);

// The same for an op and one of its cases (cost from the op's cost model; none: oracle).
ReferenceKind choose_reference(const OpDef& def, const OpCase& host_case, const EvalConfig& cfg);

}  // namespace fk::bench
