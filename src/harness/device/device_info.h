// What machine a result was measured on: the host (CPU model, cores, memory) and every
// CUDA device (name, compute capability, SMs, L2, memory, clocks, driver and runtime).
// Printed by `fk env` and stored beside every benchmark report.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fk::bench {

struct HostInfo {
  std::string cpu_model;     // "unknown" when /proc/cpuinfo does not say
  int logical_cores = 0;
  uint64_t memory_bytes = 0;
  std::string os;            // "Linux 6.1.0 x86_64"
};

struct GpuInfo {
  int index = 0;
  std::string name;          // "NVIDIA H100 80GB HBM3"
  std::string uuid;          // "GPU-xxxxxxxx-..." (empty if unknown)
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  uint64_t l2_bytes = 0;
  uint64_t persisting_l2_max_bytes = 0;
  uint64_t memory_bytes = 0;
  int memory_bus_bits = 0;
  uint64_t shared_mem_per_sm_bytes = 0;
  int sm_clock_khz = 0;      // peak clocks; 0 when the driver does not report them
  int memory_clock_khz = 0;
  bool ecc = false;
  int pci_bus = 0;

  std::string compute_capability() const { return std::to_string(cc_major) + "." + std::to_string(cc_minor); }
  // 2 * memory clock * bus width, the datasheet figure; 0 when the clock is unknown.
  double theoretical_bandwidth_bytes_per_s() const;
};

struct EnvReport {
  HostInfo host;
  bool built_with_cuda = false;
  int driver_version = 0;    // CUDA's encoding: 12040 = 12.4 (0 when there is no driver)
  int runtime_version = 0;
  std::string cuda_error;    // why no device is visible, when that is the case
  std::vector<GpuInfo> gpus;
};

HostInfo query_host();
// The CUDA devices (empty in a CPU-only build or without a driver; cuda_error says why).
EnvReport query_env();
// Only one device (throws fk::Error naming the index when there is no such device).
GpuInfo query_gpu(int device);

std::string cuda_version_string(int encoded);  // 12040 -> "12.4"
std::string utc_timestamp();                   // "2025-01-31T12:00:00Z"
std::string format_bytes(uint64_t bytes);      // 1536 -> "1.50 KiB"
// Lower-case letters, digits, '-' and '_' only: "NVIDIA H100 80GB HBM3" -> "nvidia_h100_80gb_hbm3".
std::string sanitize_device_name(const std::string& name);

nlohmann::json to_json(const HostInfo& h);
nlohmann::json to_json(const GpuInfo& g);
nlohmann::json to_json(const EnvReport& r);
// The human-readable report of `fk env`.
std::string format_env(const EnvReport& r);

}  // namespace fk::bench
