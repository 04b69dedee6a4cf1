#include "harness/device/ceilings.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "harness/device/device_info.h"
#include "fk/runtime.h"

namespace fk::bench {

namespace {

struct CeilingField {
  const char* key;
  const char* unit;
  Ceiling DeviceCeilings::*member;
};
constexpr CeilingField kFields[] = {
    {"copy_bandwidth", "B/s", &DeviceCeilings::copy_bandwidth},
    {"bf16_gemm", "flop/s", &DeviceCeilings::bf16_gemm},
    {"fp8_gemm", "flop/s", &DeviceCeilings::fp8_gemm},
    {"fp32_fma", "flop/s", &DeviceCeilings::fp32_fma},
};

template <class T>
T field(const nlohmann::json& j, const char* key, const std::string& where) {
  FK_CHECK(j.is_object() && j.contains(key), where, ": missing field '", key, "'");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, where, ": field '", key, "' has the wrong type: ", j.at(key).dump());
  }
}

}  // namespace

nlohmann::json to_json(const DeviceCeilings& c) {
  nlohmann::json ceilings = nlohmann::json::object();
  for (const auto& f : kFields) {
    const Ceiling& x = c.*f.member;
    ceilings[f.key] = {{"value", x.value}, {"unit", f.unit}, {"method", x.method}, {"detail", x.detail}};
  }
  return {{"format", kCeilingsFormat},
          {"device", c.device_name},
          {"date", c.date},
          {"driver", c.driver_version},
          {"runtime", c.runtime_version},
          {"compute_capability", c.compute_capability},
          {"sm_count", c.sm_count},
          {"ceilings", ceilings}};
}

DeviceCeilings ceilings_from_json(const nlohmann::json& j, const std::string& origin) {
  FK_CHECK(j.is_object(), origin, ": expected a JSON object");
  const int format = field<int>(j, "format", origin);
  FK_CHECK(format == kCeilingsFormat, origin, ": format ", format, " is not the supported ", kCeilingsFormat,
           " (measure again with fk env --measure)");
  DeviceCeilings c;
  c.device_name = field<std::string>(j, "device", origin);
  c.date = field<std::string>(j, "date", origin);
  c.driver_version = field<std::string>(j, "driver", origin);
  c.runtime_version = field<std::string>(j, "runtime", origin);
  c.compute_capability = field<std::string>(j, "compute_capability", origin);
  c.sm_count = field<int>(j, "sm_count", origin);
  const auto ceilings = field<nlohmann::json>(j, "ceilings", origin);
  for (const auto& f : kFields) {
    const std::string where = origin + ": ceilings." + f.key;
    const auto e = field<nlohmann::json>(ceilings, f.key, origin + ": ceilings");
    Ceiling& x = c.*f.member;
    x.value = field<double>(e, "value", where);
    FK_CHECK(x.value >= 0, where, ": negative value ", x.value);
    x.method = field<std::string>(e, "method", where);
    x.detail = e.contains("detail") ? field<std::string>(e, "detail", where) : "";
  }
  return c;
}

std::filesystem::path ceilings_dir() {
  if (const char* home = std::getenv("FK_HOME"); home && *home) return std::filesystem::path(home) / "ceilings";
  const char* user_home = std::getenv("HOME");
  FK_CHECK(user_home && *user_home, "cannot place the ceilings: neither FK_HOME nor HOME is set");
  return std::filesystem::path(user_home) / ".cache" / "fastkernels" / "ceilings";
}

std::filesystem::path ceilings_path(const std::string& device_name) {
  return ceilings_dir() / (sanitize_device_name(device_name) + ".json");
}

std::optional<DeviceCeilings> load_ceilings(const std::string& device_name) {
  const auto path = ceilings_path(device_name);
  std::ifstream in(path);
  if (!in) return std::nullopt;
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, path.string(), ": not valid JSON (", e.what(), "); measure again with fk env --measure");
  }
  return ceilings_from_json(j, path.string());
}

std::optional<DeviceCeilings> load_ceilings(int device) {
  if (!rt::cuda_available() || device < 0 || device >= rt::device_count()) return std::nullopt;
  return load_ceilings(query_gpu(device).name);
}

std::filesystem::path save_ceilings(const DeviceCeilings& c) {
  const auto path = ceilings_path(c.device_name);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  FK_CHECK(!ec, "cannot create ", path.parent_path().string(), ": ", ec.message());
  // Write a neighbour and rename: a reader never sees half a file.
  const auto tmp = path.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    FK_CHECK(out.good(), "cannot write ", tmp);
    out << to_json(c).dump(2) << "\n";
    FK_CHECK(out.good(), "writing ", tmp, " failed");
  }
  std::filesystem::rename(tmp, path, ec);
  FK_CHECK(!ec, "cannot move ", tmp, " to ", path.string(), ": ", ec.message());
  return path;
}

double compute_rate(const DeviceCeilings& c, DType t) {
  switch (t) {
    case DType::bf16:
    case DType::f16: return c.bf16_gemm.value;
    case DType::f8e4m3fn:
    case DType::f8e5m2: return c.fp8_gemm.value;
    default: return c.fp32_fma.value;
  }
}

const char* compute_ceiling_name(DType t) {
  switch (t) {
    case DType::bf16:
    case DType::f16: return "bf16_gemm";
    case DType::f8e4m3fn:
    case DType::f8e5m2: return "fp8_gemm";
    default: return "fp32_fma";
  }
}

SpeedOfLight speed_of_light(const OpCost& cost, const DeviceCeilings& c) {
  SpeedOfLight s;
  if (c.copy_bandwidth.value > 0) s.memory_s = cost.bytes / c.copy_bandwidth.value;
  const double rate = compute_rate(c, cost.math_dtype);
  if (rate > 0) s.compute_s = cost.flops / rate;
  return s;
}

double sol_fraction(const OpCost& cost, double measured_seconds, const DeviceCeilings& c) {
  if (!(measured_seconds > 0)) return 0;
  return speed_of_light(cost, c).seconds() / measured_seconds;
}

std::string format_ceilings(const DeviceCeilings& c) {
  std::ostringstream os;
  os << "ceilings of " << c.device_name << " (sm_" << c.compute_capability << ", " << c.sm_count << " SMs), driver "
     << c.driver_version << ", runtime " << c.runtime_version << ", measured " << c.date << "\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-16s %14s  %s\n", "ceiling", "value", "method");
  os << line;
  for (const auto& f : kFields) {
    const Ceiling& x = c.*f.member;
    char value[48];
    if (!x.measured()) std::snprintf(value, sizeof value, "-");
    else if (f.member == &DeviceCeilings::copy_bandwidth) std::snprintf(value, sizeof value, "%.3f TB/s", x.value / 1e12);
    else std::snprintf(value, sizeof value, "%.1f TFLOP/s", x.value / 1e12);
    std::snprintf(line, sizeof line, "  %-16s %14s  %s\n", f.key, value, x.method.empty() ? "not measured" : x.method.c_str());
    os << line;
    if (!x.detail.empty()) os << "  " << std::string(16 + 1 + 14 + 2, ' ') << x.detail << "\n";
  }
  return os.str();
}

MeasureOptions MeasureOptions::quick() {
  MeasureOptions o;
  o.copy_buffer_bytes = size_t{64} << 20;
  o.copy_runs = 5;
  o.gemm_size = 1024;
  o.gemm_runs = 3;
  o.gemm_candidates = 2;
  o.fma_runs = 3;
  o.fma_iterations = 200;
  return o;
}

}  // namespace fk::bench
