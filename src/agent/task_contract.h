// What the model is told about a task, once, at the top of every conversation: the op's
// declaration (signature and semantics) and the ABI type, the CPU reference source, the
// production workloads with their call counts, the device and its measured ceilings, the
// baseline's time and fraction of speed of light, the compile command, the headers a
// candidate may include, the rules the harness enforces, and a skeleton that compiles.
#pragma once
#include <string>

#include "harness/judge/task.h"
#include "harness/judge/verdict.h"

namespace fk::agent {

struct ContractInputs {
  const bench::Task* task = nullptr;
  DeviceType backend = DeviceType::cuda;
  const bench::EvalResult* baseline = nullptr;  // the baseline against itself; null: not measured
  std::string device;                           // describe_device(backend)
};

std::string task_contract(const ContractInputs& in);

// The parts, for tests and for the summary.
std::string describe_device(DeviceType backend);
std::string compile_command(DeviceType backend);  // with <candidate> and <library> placeholders
std::string available_headers(DeviceType backend);
// The files that register the op's CPU reference, with the op-family headers they include.
std::string reference_source(const OpDef& def, size_t max_chars = 40000);
std::string candidate_skeleton(const bench::Task& task, DeviceType backend);
std::string workloads_table(const bench::Task& task, const bench::EvalResult* baseline);
// ".cu" for CUDA, ".cpp" for the CPU backend.
std::string candidate_extension(DeviceType backend);

}  // namespace fk::agent
