// A device's measured ceilings (`fk env --measure`): copy bandwidth, dense bf16 and fp8
// GEMM throughput and the fp32 FMA rate, stored as JSON per device so that every later
// report states its results as a fraction of speed of light.
//
//   speed of light (s) = max(OpCost::bytes / copy bandwidth, OpCost::flops / rate)
//   rate by OpCost::math_dtype: bf16/f16 -> bf16 GEMM, f8 -> fp8 GEMM, anything else ->
//   fp32 FMA.
#pragma once
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "fk/op_registry.h"

namespace fk::bench {

struct Ceiling {
  double value = 0;     // bytes/s for bandwidth, flop/s for rates; 0 = not measured
  std::string method;   // how it was measured, in words
  std::string detail;   // the alternatives tried and what they reached
  bool measured() const { return value > 0; }
};

struct DeviceCeilings {
  std::string device_name;
  std::string date;              // ISO 8601, UTC
  std::string driver_version;    // "12.4"
  std::string runtime_version;
  std::string compute_capability;
  int sm_count = 0;
  Ceiling copy_bandwidth;        // device-to-device, bytes read + written per second
  Ceiling bf16_gemm;             // dense bf16 GEMM, fp32 accumulate
  Ceiling fp8_gemm;              // dense fp8 e4m3 GEMM
  Ceiling fp32_fma;              // fp32 FMA rate, 2 flops per FMA
};

inline constexpr int kCeilingsFormat = 1;

nlohmann::json to_json(const DeviceCeilings& c);
// Throws fk::Error naming the field (and `origin`, e.g. the file) for a malformed document.
DeviceCeilings ceilings_from_json(const nlohmann::json& j, const std::string& origin = "ceilings");

// $FK_HOME/ceilings, else ~/.cache/fastkernels/ceilings.
std::filesystem::path ceilings_dir();
std::filesystem::path ceilings_path(const std::string& device_name);
// The stored ceilings of a device (by its name as CUDA reports it), if any.
std::optional<DeviceCeilings> load_ceilings(const std::string& device_name);
// The stored ceilings of CUDA device `device`; none without a device or a stored file.
std::optional<DeviceCeilings> load_ceilings(int device);
// Writes ceilings_path(c.device_name) (atomically) and returns the path.
std::filesystem::path save_ceilings(const DeviceCeilings& c);

// The compute ceiling that applies to an op's math dtype (flop/s; 0 when not measured).
double compute_rate(const DeviceCeilings& c, DType math_dtype);
const char* compute_ceiling_name(DType math_dtype);  // "bf16_gemm", "fp8_gemm", "fp32_fma"

struct SpeedOfLight {
  double memory_s = 0;   // bytes / copy bandwidth
  double compute_s = 0;  // flops / rate (0 when that rate is not measured)
  double seconds() const { return std::max(memory_s, compute_s); }
  const char* bound() const { return compute_s > memory_s ? "compute" : "memory"; }
};
SpeedOfLight speed_of_light(const OpCost& cost, const DeviceCeilings& c);
// speed of light / measured time: 1.0 means the op runs at the device's ceiling.
double sol_fraction(const OpCost& cost, double measured_seconds, const DeviceCeilings& c);

// The table `fk env --measure` prints.
std::string format_ceilings(const DeviceCeilings& c);

inline constexpr const char* kNoCeilingsHint = "no ceilings stored: run fk env --measure";

// --- measurement (CUDA builds; a CPU-only build throws FK_ERR_UNSUPPORTED) --------------
struct MeasureOptions {
  int device = 0;
  size_t copy_buffer_bytes = size_t{2} << 30;  // per buffer (source and destination)
  int copy_runs = 50;
  int gemm_size = 8192;                         // M = N = K
  int gemm_runs = 30;
  int gemm_candidates = 8;                      // the heuristic's top algorithms tried
  int fma_runs = 20;
  int fma_iterations = 20000;
  uint64_t seed = 0x5eed;
  std::function<void(const std::string&)> progress;  // one line per step, may be empty
  // Small sizes and few runs: checks the code paths (tests), not the device.
  static MeasureOptions quick();
};

DeviceCeilings measure_ceilings(const MeasureOptions& options);

}  // namespace fk::bench
