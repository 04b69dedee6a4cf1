// Checking one implementation of one op on one workload against the double-precision
// oracle (the op's CPU reference run with f64 outputs). Used by the op tests, `fk ops
// check`, and as the core of the harness's correctness verdict.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fk/op_registry.h"

namespace fk::bench {

struct OutputError {
  std::string name;
  int64_t numel = 0;
  int64_t num_bad = 0;        // elements outside atol + rtol*|ref|
  int64_t num_nonfinite = 0;  // NaN/Inf where the oracle is finite (includes unwritten poison)
  double max_abs_err = 0;
  double max_rel_err = 0;     // |x-ref| / max(|ref|, atol)
  double rel_l2_err = 0;      // ||x-ref|| / ||ref||
  int64_t worst_index = -1;   // linear index of the largest tolerance violation (or error)
  double worst_value = 0, worst_ref = 0;
  Tolerance tol;
};

struct CheckResult {
  bool passed = false;
  std::string message;              // why it failed (empty when passed)
  std::vector<OutputError> outputs;
  bool inputs_unchanged = true;
};

// Builds the case from (workload, seed), runs `impl` (the registry's active implementation
// for `backend` when null) on copies on that backend, and compares every out/inout tensor
// with the oracle. Outputs are poisoned first; inputs must be unchanged afterwards.
CheckResult check_op(const OpDef& def, const Json& workload, uint64_t seed, DeviceType backend,
                     fk_op_fn impl = nullptr);

// The oracle's copy of a case: out/inout tensors as f64 (inout values carried over).
OpCase make_oracle_case(const OpDef& def, const OpCase& host_case);
void run_oracle(const OpDef& def, OpCase& oracle_case);

// Copies every tensor of a case to a device (bound anew); host_only ones (plan inputs and
// plan state) get copies of their own on the host.
OpCase case_to_device(const OpDef& def, const OpCase& c, Device device);

// Fills out (and workspace) tensors with a poison pattern: NaN for floats, 0xA5 bytes for
// integers, so unwritten elements are caught. Workspace filled by a plan must be spared.
void poison_outputs(const OpDef& def, OpCase& c, void* stream = nullptr, bool workspace_too = true);
// The byte poison_outputs fills a tensor of this dtype with.
uint8_t poison_byte(DType t);

// Content hash of a tensor's bytes (downloaded if on a device).
uint64_t fingerprint(const Tensor& t);

OutputError compare_output(const std::string& name, const Tensor& actual, const Tensor& oracle, Tolerance tol);
// "output 'out': 3 of 96 elements outside tolerance (...); " for an output with bad elements.
std::string describe_output_error(const OutputError& e);

}  // namespace fk::bench
