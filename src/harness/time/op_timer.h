// Timing ops on a CUDA device the way the benchmark defines a speedup (DESIGN.md,
// Timing): CUDA events around each call on a dedicated stream, the L2 flushed (and
// persisting lines reset) before every timed call, input sets rotated, warm-up first,
// many timed calls, median with spread.
//
// Two layers:
//   DeviceTimer   times any callable(s) with that method and returns every sample; the
//                 harness uses time_interleaved() to alternate baseline and candidate so
//                 that clock and temperature drift hit both alike.
//   bench_op()    one op on one workload: builds the case, copies it to the device in
//                 enough copies to exceed L2, runs the op's plan, times the registry's
//                 active CUDA implementation and relates the median to the stored
//                 ceilings (speed of light).
// This header needs no CUDA headers; a CPU-only build throws FK_ERR_UNSUPPORTED when a
// DeviceTimer is made.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/device/ceilings.h"
#include "harness/time/stats.h"
#include "fk/op_registry.h"

namespace fk::bench {

struct TimerOptions {
  int warmup_calls = 10;
  int min_calls = 50;         // timed calls at least
  int max_calls = 1000;       // and at most
  double min_time_ms = 100;   // short kernels: keep going until this much timed device time
  double max_time_ms = 20000; // long kernels: stop here once min(min_calls, 5) calls ran
  bool flush_l2 = true;
  size_t flush_bytes = 0;     // 0: twice the device's L2
  int max_batch = 100;        // calls between host synchronisations
};

// One call to time. `set` is the input set to use (calls rotate over them), `stream` the
// timer's cudaStream_t. It must enqueue its work on that stream and may not synchronise.
using TimedCall = std::function<void(int set, void* stream)>;

class DeviceTimer {
 public:
  explicit DeviceTimer(int device = 0, TimerOptions options = {});
  ~DeviceTimer();
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;

  int device() const;
  void* stream() const;          // the dedicated (non-blocking) stream of every timed call
  size_t l2_bytes() const;
  size_t flush_bytes() const;    // 0 when flushing is off
  const TimerOptions& options() const;
  size_t free_memory() const;    // free bytes on the device now

  // Microseconds of each timed call; call i uses input set i % num_sets.
  std::vector<double> time(const TimedCall& call, int num_sets = 1);
  // Round robin over `calls` (each sample with its own flush and events); samples[k]
  // belongs to calls[k]. Every callable gets the same number of samples.
  std::vector<std::vector<double>> time_interleaved(const std::vector<TimedCall>& calls, int num_sets = 1);
  // One timed call (flush, events, wait): for callers that must act between calls, like
  // the harness re-checking every timed output. No warm-up.
  double time_once(const std::function<void(void* stream)>& call);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// How many copies of an input set to rotate: enough that together they exceed twice the
// L2 (so no call finds its inputs cached even without the flush), at most max_sets, and
// no more than `memory_budget` bytes in all. At least 1.
int choose_num_sets(size_t set_bytes, size_t l2_bytes, size_t memory_budget, int max_sets);

// Copies of a host case on a device: the first uploaded, the rest copied on the device.
std::vector<OpCase> make_device_sets(const OpDef& def, const OpCase& host, Device device, int num_sets);

struct OpBenchOptions {
  TimerOptions timer;
  uint64_t seed = 1;
  int max_sets = 64;
  double memory_fraction = 0.5;  // of the free device memory the input copies may take
};

struct OpBenchResult {
  std::string op;
  Json workload;
  std::string implementation;    // the registry's origin of the active implementation
  OpCost cost;
  int num_sets = 0;
  size_t set_bytes = 0;
  std::vector<double> samples_us;
  Summary us;                    // of samples_us
  double gbps = 0;               // OpCost::bytes / median
  double tflops = 0;             // OpCost::flops / median
  std::optional<double> sol;     // fraction of speed of light (with stored ceilings)
  std::string sol_bound;         // "memory" or "compute"
  // Both sides of the speed of light, whichever binds (with stored ceilings): bytes moved
  // at the copy bandwidth, and flops at the compute ceiling, over the measured time.
  std::optional<double> bandwidth_fraction, compute_fraction;
  std::string error;             // set when this workload could not be timed
};

OpBenchResult bench_op(const OpDef& def, const Json& workload, DeviceTimer& timer, const OpBenchOptions& options,
                       const DeviceCeilings* ceilings);
// Fills gbps, tflops and sol from cost and the samples (separate for the tests).
void finish_result(OpBenchResult& r, const DeviceCeilings* ceilings);

struct OpBenchReport {
  std::string device;
  std::string command_line;
  std::string date;
  TimerOptions timer;
  std::optional<DeviceCeilings> ceilings;
  std::vector<OpBenchResult> results;
};

std::string format_table(const OpBenchReport& report);
nlohmann::json to_json(const OpBenchReport& report);
// The running process's command line (from /proc/self/cmdline), for reports.
std::string current_command_line();

}  // namespace fk::bench
