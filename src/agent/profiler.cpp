#include "agent/profiler.h"

#include <cctype>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "harness/time/kernel_profile.h"
#include "harness/sandbox/subprocess.h"
#include "harness/sandbox/worker.h"

namespace fk::agent {

namespace fs = std::filesystem;

const std::vector<std::string>& profiler_metrics() {
  static const std::vector<std::string> m = {
      "gpu__time_duration.sum",
      "launch__registers_per_thread",
      "sm__warps_active.avg.pct_of_peak_sustained_active",
      "sm__throughput.avg.pct_of_peak_sustained_elapsed",
      "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
      "dram__throughput.avg.pct_of_peak_sustained_elapsed",
  };
  return m;
}

std::string find_executable(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::istringstream in(path);
  std::string dir;
  while (std::getline(in, dir, ':')) {
    if (dir.empty()) continue;
    const fs::path p = fs::path(dir) / name;
    if (access(p.c_str(), X_OK) == 0 && !fs::is_directory(p)) return p.string();
  }
  return "";
}

namespace {

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

double number(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  return end == s.c_str() ? 0 : v;
}

double to_us(double v, const std::string& unit) {
  if (unit == "nsecond" || unit == "ns") return v / 1e3;
  if (unit == "msecond" || unit == "ms") return v * 1e3;
  if (unit == "second" || unit == "s") return v * 1e6;
  return v;  // usecond
}

std::string demangled(const std::string& name) {
  std::string out = bench::demangle(name);
  if (out.size() > 120) out = out.substr(0, 117) + "...";
  return out;
}

std::string fmt(double v, int prec = 1) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(prec);
  os << v;
  return os.str();
}

// Mangled names stored anywhere in the library's bytes. The device code's symbol table
// names each kernel as ncu reports it; the host-side symbols (what nm lists) are stubs with
// other names (nvcc gives them internal linkage: _ZN3advL13... for the kernel _ZN3adv13...),
// so they cannot tell the candidate's kernels apart.
std::set<std::string> embedded_mangled_names(const fs::path& lib) {
  std::set<std::string> out;
  std::ifstream in(lib, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; };
  for (size_t i = bytes.find("_Z"); i != std::string::npos; i = bytes.find("_Z", i + 2)) {
    if (i > 0 && ident(bytes[i - 1])) continue;  // inside a longer token
    size_t j = i + 2;
    while (j < bytes.size() && ident(bytes[j])) ++j;
    if (j - i > 4) out.insert(bytes.substr(i, j - i));
  }
  return out;
}

}  // namespace

std::string summarize_ncu_csv(const std::string& csv, const std::set<std::string>& candidate_symbols,
                              size_t max_kernels) {
  std::istringstream in(csv);
  std::string line;
  std::vector<std::string> header, units;
  struct Agg {
    int launches = 0;
    double time_us = 0;
    std::map<std::string, double> sums;
    std::string block, grid;
  };
  std::map<std::string, Agg> kernels;
  std::set<std::string> others;  // kernels seen that are not the candidate's (named when none is)
  while (std::getline(in, line)) {
    if (header.empty()) {
      if (line.rfind("\"ID\"", 0) == 0) header = csv_fields(line);
      continue;
    }
    const std::vector<std::string> f = csv_fields(line);
    if (f.size() != header.size()) continue;
    if (units.empty() && f[0].empty()) {  // the units row
      units = f;
      continue;
    }
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = f[i];
    const std::string name = row["Kernel Name"];
    if (name.empty()) continue;
    if (!candidate_symbols.empty() && !candidate_symbols.count(name)) {
      others.insert(name);
      continue;
    }
    Agg& a = kernels[name];
    ++a.launches;
    a.block = row["Block Size"];
    a.grid = row["Grid Size"];
    for (size_t i = 0; i < header.size(); ++i) {
      const std::string& m = header[i];
      if (std::find(profiler_metrics().begin(), profiler_metrics().end(), m) == profiler_metrics().end()) continue;
      double v = number(f[i]);
      if (m == "gpu__time_duration.sum") {
        v = to_us(v, i < units.size() ? units[i] : "nsecond");
        a.time_us += v;
      }
      a.sums[m] += v;
    }
  }
  if (kernels.empty()) {
    if (candidate_symbols.empty()) return "no kernels were profiled";
    std::string seen;
    for (const auto& n : others) seen += (seen.empty() ? "" : ", ") + n;
    return concat("no kernel of the candidate was profiled (", header.empty() ? "no CSV header" : "kernels seen: ",
                  seen.empty() ? "none" : seen, ")");
  }
  std::vector<std::pair<std::string, Agg>> sorted(kernels.begin(), kernels.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) { return x.second.time_us > y.second.time_us; });
  std::ostringstream os;
  os << "Nsight Compute, " << sorted.size() << " kernel" << (sorted.size() == 1 ? "" : "s")
     << (candidate_symbols.empty() ? " (the baseline's included: the candidate's could not be told apart)"
                                   : " of the candidate");
  for (size_t k = 0; k < std::min(max_kernels, sorted.size()); ++k) {
    const auto& [name, a] = sorted[k];
    auto mean = [&](const char* m) { return a.sums.count(m) ? a.sums.at(m) / a.launches : 0.0; };
    os << "\n- " << demangled(name) << ": " << a.launches << " launches, mean " << fmt(a.time_us / a.launches, 2)
       << " us, grid " << a.grid << ", block " << a.block << ", " << fmt(mean("launch__registers_per_thread"), 0)
       << " registers/thread, achieved occupancy " << fmt(mean("sm__warps_active.avg.pct_of_peak_sustained_active"))
       << "%, SM throughput " << fmt(mean("sm__throughput.avg.pct_of_peak_sustained_elapsed"))
       << "% of peak, memory throughput "
       << fmt(mean("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")) << "% (DRAM "
       << fmt(mean("dram__throughput.avg.pct_of_peak_sustained_elapsed")) << "%)";
  }
  return os.str();
}

std::string profile_candidate(const bench::Task& task, const bench::CandidateRun& run, DeviceType backend,
                              const ProfileOptions& o) {
  if (!o.enabled) return "unavailable: profiling is off";
  if (backend != DeviceType::cuda) return "unavailable: the CPU backend has no kernel profiler";
  const std::string ncu = find_executable(o.ncu);
  if (ncu.empty()) return "unavailable: ncu (Nsight Compute) is not on PATH";
  if (!run.compile.ok) return "unavailable: the candidate did not compile";

  static std::atomic<int> counter{0};
  const fs::path dir = fs::temp_directory_path() / concat("fk-profile-", getpid(), "-", counter++);
  fs::create_directories(dir);
  bench::WorkerRequest req;
  req.task = task;
  req.library = run.compile.library;
  req.config.backend = DeviceType::cuda;
  req.config.time = false;  // the correctness rounds launch every kernel; timing adds nothing here
  for (int i = 0; i < 3; ++i) req.config.seeds.push_back(bench::fresh_seed());
  req.config.secret_seed = bench::fresh_seed();
  std::ofstream(dir / "request.json") << bench::request_to_json(req).dump();

  std::string metrics;
  for (const auto& m : profiler_metrics()) metrics += (metrics.empty() ? "" : ",") + m;
  const std::string exe = o.fk_executable.empty() ? bench::self_executable() : o.fk_executable;
  bench::ProcessOptions po;
  po.timeout_s = o.timeout_s;
  const bench::ProcessResult prof =
      bench::run_process({ncu, "--metrics", metrics, "--launch-count", "200", "--target-processes", "all", "-f", "-o",
                          (dir / "report").string(), exe, "kernels", "worker", "--request",
                          (dir / "request.json").string(), "--result", (dir / "result.json").string()},
                         po);
  std::string summary;
  if (!prof.exited() || prof.exit_code != 0 || !fs::exists(dir / "report.ncu-rep")) {
    const std::string& out = prof.output;
    summary = concat("unavailable: ncu failed (", prof.describe(), "): ", out.substr(out.size() > 600 ? out.size() - 600 : 0));
  } else {
    const bench::ProcessResult csv = bench::run_process({ncu, "--import", (dir / "report.ncu-rep").string(), "--csv",
                                                         "--page", "raw", "--print-kernel-base", "mangled"},
                                                        po);
    summary = csv.exited() && csv.exit_code == 0
                  ? summarize_ncu_csv(csv.output, embedded_mangled_names(run.compile.library))
                  : concat("unavailable: ncu --import failed (", csv.describe(), ")");
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return summary;
}

}  // namespace fk::agent
