#include "harness/device/device_info.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

namespace fk::bench {

double GpuInfo::theoretical_bandwidth_bytes_per_s() const {
  return 2.0 * memory_clock_khz * 1e3 * memory_bus_bits / 8.0;
}

HostInfo query_host() {
  HostInfo h;
  h.cpu_model = "unknown";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    // x86 says "model name", some Arm kernels "Model" or only "CPU part".
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
      if (auto colon = line.find(':'); colon != std::string::npos) {
        std::string v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        if (!v.empty()) h.cpu_model = v;
        break;
      }
    }
  }
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  h.logical_cores = online > 0 ? static_cast<int>(online) : static_cast<int>(std::thread::hardware_concurrency());
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0) h.memory_bytes = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
  utsname u{};
  if (uname(&u) == 0) h.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  return h;
}

std::string cuda_version_string(int v) {
  if (v <= 0) return "none";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string utc_timestamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string format_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024.0 && u < 5) v /= 1024.0, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

std::string sanitize_device_name(const std::string& name) {
  std::string out;
  for (unsigned char c : name) {
    if (std::isalnum(c) || c == '-') {
      out += static_cast<char>(std::tolower(c));
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "unknown_device" : out;
}

nlohmann::json to_json(const HostInfo& h) {
  return {{"cpu_model", h.cpu_model}, {"logical_cores", h.logical_cores}, {"memory_bytes", h.memory_bytes},
          {"os", h.os}};
}

nlohmann::json to_json(const GpuInfo& g) {
  return {{"index", g.index},
          {"name", g.name},
          {"uuid", g.uuid},
          {"compute_capability", g.compute_capability()},
          {"sm_count", g.sm_count},
          {"l2_bytes", g.l2_bytes},
          {"persisting_l2_max_bytes", g.persisting_l2_max_bytes},
          {"memory_bytes", g.memory_bytes},
          {"memory_bus_bits", g.memory_bus_bits},
          {"shared_mem_per_sm_bytes", g.shared_mem_per_sm_bytes},
          {"sm_clock_khz", g.sm_clock_khz},
          {"memory_clock_khz", g.memory_clock_khz},
          {"theoretical_bandwidth_bytes_per_s", g.theoretical_bandwidth_bytes_per_s()},
          {"ecc", g.ecc},
          {"pci_bus", g.pci_bus}};
}

nlohmann::json to_json(const EnvReport& r) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : r.gpus) gpus.push_back(to_json(g));
  nlohmann::json j = {{"host", to_json(r.host)},
                      {"built_with_cuda", r.built_with_cuda},
                      {"driver_version", cuda_version_string(r.driver_version)},
                      {"runtime_version", cuda_version_string(r.runtime_version)},
                      {"gpus", gpus}};
  if (!r.cuda_error.empty()) j["cuda_error"] = r.cuda_error;
  return j;
}

std::string format_env(const EnvReport& r) {
  std::ostringstream os;
  os << "host\n"
     << "  cpu            " << r.host.cpu_model << "\n"
     << "  cores          " << r.host.logical_cores << " logical\n"
     << "  memory         " << format_bytes(r.host.memory_bytes) << "\n"
     << "  os             " << r.host.os << "\n";
  if (!r.built_with_cuda) {
    os << "cuda\n  no CUDA device: fastkernels was built without CUDA (FK_CUDA=OFF)\n";
    return os.str();
  }
  os << "cuda\n"
     << "  driver         " << cuda_version_string(r.driver_version) << "\n"
     << "  runtime        " << cuda_version_string(r.runtime_version) << "\n";
  if (r.gpus.empty()) {
    os << "  no CUDA device" << (r.cuda_error.empty() ? "" : ": " + r.cuda_error) << "\n";
    return os.str();
  }
  for (const auto& g : r.gpus) {
    char clocks[96] = "not reported";
    if (g.sm_clock_khz > 0)
      std::snprintf(clocks, sizeof clocks, "SM %d MHz, memory %d MHz", g.sm_clock_khz / 1000,
                    g.memory_clock_khz / 1000);
    char bw[48] = "";
    if (g.theoretical_bandwidth_bytes_per_s() > 0)
      std::snprintf(bw, sizeof bw, " (datasheet %.2f TB/s)", g.theoretical_bandwidth_bytes_per_s() / 1e12);
    os << "gpu " << g.index << "          " << g.name << "\n"
       << "  capability     sm_" << g.cc_major << g.cc_minor << " (" << g.compute_capability() << ")\n"
       << "  SMs            " << g.sm_count << "\n"
       << "  L2             " << format_bytes(g.l2_bytes) << " (persisting max "
       << format_bytes(g.persisting_l2_max_bytes) << ")\n"
       << "  memory         " << format_bytes(g.memory_bytes) << ", " << g.memory_bus_bits << "-bit bus" << bw
       << (g.ecc ? ", ECC on" : "") << "\n"
       << "  smem per SM    " << format_bytes(g.shared_mem_per_sm_bytes) << "\n"
       << "  clocks (peak)  " << clocks << "\n";
    if (!g.uuid.empty()) os << "  uuid           " << g.uuid << "\n";
  }
  return os.str();
}

}  // namespace fk::bench
