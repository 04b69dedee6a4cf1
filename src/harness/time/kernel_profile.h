// Where a phase's device time went, from a kernel trace: time and launches per kernel,
// and how much of the phase's wall time the device was busy at all. `fk bench latency
// --kernel-profile` prints it for the decode steps, the answer to "which kernel do I
// speed up next" that a profiler would give, without leaving the benchmark.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/time/kernel_trace.h"

namespace fk::bench {

struct KernelProfileRow {
  std::string name;  // demangled, without its parameter list
  int64_t launches = 0;
  uint64_t total_ns = 0;      // start to end, summed
  uint64_t exclusive_ns = 0;  // what the kernel added to the busy time (see below)
};

// A kernel's exclusive time is the part of its interval that no kernel which started
// earlier still covers: with programmatic dependent launch a kernel starts (and waits)
// while its predecessor runs, so start-to-end time double-counts, while the exclusive
// times of all kernels add up to the busy time. That is the time a faster kernel could save.
struct KernelProfile {
  std::vector<KernelProfileRow> rows;  // most exclusive time first
  uint64_t kernel_ns = 0;              // sum of every kernel's duration
  uint64_t busy_ns = 0;                // union of the kernels' intervals (overlap counted once)
  uint64_t span_ns = 0;                // first kernel start to last kernel end
  int64_t launches = 0;
};

// The demangled form of an Itanium-mangled name ("_Z..."); any other name as it is.
std::string demangle(const std::string& name);

// A readable kernel name: demangled, its parameter list dropped (template arguments kept,
// since two instantiations are two kernels).
std::string short_kernel_name(const std::string& mangled);

// Aggregates the records whose start lies in [from_ns, to_ns).
KernelProfile profile_kernels(const std::vector<KernelRecord>& records, uint64_t from_ns, uint64_t to_ns);

// The profile as JSON, per unit (a decode step: divide by the steps): the top `top` rows by
// exclusive time with launches and microseconds per unit, the rest summed into one row.
nlohmann::json kernel_profile_json(const KernelProfile& p, double units, size_t top);

}  // namespace fk::bench
