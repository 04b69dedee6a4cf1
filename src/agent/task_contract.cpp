#include "agent/task_contract.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "harness/device/ceilings.h"
#include "harness/sandbox/compile.h"
#include "harness/device/device_info.h"
#include "harness/judge/op_source.h"
#include "fk/op.h"

namespace fk::agent {

namespace fs = std::filesystem;
using bench::EvalResult;
using bench::Task;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return in ? std::string(std::istreambuf_iterator<char>(in), {}) : std::string();
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

std::string describe_ceiling(const char* name, const bench::Ceiling& c, double scale, const char* unit) {
  return c.measured() ? concat("  ", name, ": ", fmt("%.1f", c.value / scale), " ", unit, "\n")
                      : concat("  ", name, ": not measured\n");
}

// The workload of a baseline result that matches a task workload's shape.
const bench::WorkloadResult* result_for(const EvalResult* r, const Json& shape) {
  if (!r) return nullptr;
  for (const auto& w : r->workloads)
    if (w.timed && w.shape == shape) return &w;
  return nullptr;
}

}  // namespace

std::string candidate_extension(DeviceType backend) { return backend == DeviceType::cuda ? ".cu" : ".cpp"; }

std::string describe_device(DeviceType backend) {
  std::ostringstream os;
  if (backend == DeviceType::cpu) {
    const bench::HostInfo h = bench::query_host();
    os << "CPU backend: the candidate runs on the host CPU (" << h.cpu_model << ", " << h.logical_cores
       << " logical cores), single-threaded calls; tensors live in host memory. No device ceilings apply.\n";
    return os.str();
  }
  try {
    const bench::GpuInfo g = bench::query_gpu(0);
    os << g.name << ", compute capability " << g.compute_capability() << " (nvcc targets sm_90a), " << g.sm_count
       << " SMs, L2 " << bench::format_bytes(g.l2_bytes) << ", memory " << bench::format_bytes(g.memory_bytes)
       << ", shared memory per SM " << bench::format_bytes(g.shared_mem_per_sm_bytes) << "\n";
    if (const auto c = bench::load_ceilings(0)) {
      os << "Measured ceilings (speed of light = max(bytes / bandwidth, flops / rate)):\n"
         << describe_ceiling("copy bandwidth", c->copy_bandwidth, 1e9, "GB/s")
         << describe_ceiling("bf16 GEMM", c->bf16_gemm, 1e12, "TFLOP/s")
         << describe_ceiling("fp8 GEMM", c->fp8_gemm, 1e12, "TFLOP/s")
         << describe_ceiling("fp32 FMA", c->fp32_fma, 1e12, "TFLOP/s");
    } else {
      os << "Measured ceilings: none stored for this device (fractions of speed of light are not reported).\n";
    }
  } catch (const std::exception& e) {
    os << "CUDA device 0: not queryable (" << e.what() << ")\n";
  }
  return os.str();
}

std::string compile_command(DeviceType backend) {
  const bench::Toolchain tc = bench::Toolchain::engine();
  const bool cuda = backend == DeviceType::cuda;
  std::string cmd = cuda ? concat(tc.nvcc, " ", tc.cuda_flags) : concat(tc.cxx, " ", tc.cxx_flags);
  cmd += concat(" -DFK_CANDIDATE=1 -DFK_CANDIDATE_ABI=", FK_ABI_VERSION);
  for (const auto& d : tc.include_dirs) cmd += " -I" + d;
  cmd += cuda ? " -shared -cudart=shared <candidate>.cu -o <library>.so" : " -shared <candidate>.cpp -o <library>.so";
  return concat(cmd, "\n(", cuda ? tc.cuda_version + " with " + tc.cxx_version : tc.cxx_version, ")");
}

std::string available_headers(DeviceType backend) {
  std::vector<std::string> names;
  const fs::path inc = bench::source_root() / "include";
  for (const char* sub : {"fk", "fk/ops", "fk/cuda"}) {
    if (backend == DeviceType::cpu && std::string(sub) == "fk/cuda") continue;
    if (!fs::is_directory(inc / sub)) continue;
    for (const auto& e : fs::directory_iterator(inc / sub))
      if (e.is_regular_file()) names.push_back(fs::relative(e.path(), inc).string());
  }
  std::sort(names.begin(), names.end());
  std::string out = "fastkernels headers (header-only parts only: the candidate library is not linked against the "
                    "fastkernels library, so functions that are declared there but defined out of line are "
                    "unavailable):\n ";
  for (const auto& n : names) out += " " + n;
  out += "\nthe C++20 standard library";
  if (backend == DeviceType::cuda)
    out += ", the CUDA toolkit (CUDA runtime, cooperative groups, cuda_bf16.h/cuda_fp16.h/cuda_fp8.h, CUB), "
           "CUTLASS/CuTe (cutlass/..., cute/...) and FlashInfer (flashinfer/...)";
  return out + "\n";
}

std::string reference_source(const OpDef& def, size_t max_chars) {
  std::vector<fs::path> files = bench::op_reference_files(def);
  const fs::path root = bench::source_root();
  // The family's own headers these files include hold the reference math (norm_reference.h...).
  std::set<fs::path> seen(files.begin(), files.end());
  const std::regex include_re("#include \"(ops/[^\"]+)\"");
  for (size_t i = 0, n = files.size(); i < n; ++i) {
    const std::string text = slurp(files[i]);
    for (std::sregex_iterator it(text.begin(), text.end(), include_re), end; it != end; ++it) {
      const fs::path p = root / "src" / (*it)[1].str();
      const std::string name = p.filename().string();
      if (name.find("validate") != std::string::npos || name.find("case_builder") != std::string::npos) continue;
      if (fs::exists(p) && seen.insert(p).second) files.push_back(p);
    }
  }
  std::string out;
  for (const auto& f : files) {
    std::string text = slurp(f);
    const std::string head = concat("// ---- ", fs::relative(f, root).string(), " ----\n");
    if (out.size() + head.size() + text.size() > max_chars) {
      const size_t room = max_chars > out.size() + head.size() ? max_chars - out.size() - head.size() : 0;
      out += head + text.substr(0, room) + "\n// ... (cut)\n";
      break;
    }
    out += head + text + "\n";
  }
  return out.empty() ? "(no CPU reference source found)\n" : out;
}

std::string candidate_skeleton(const Task& t, DeviceType backend) {
  const OpDef& d = t.op_def();
  const std::string args = bench::op_args_struct(d);
  std::ostringstream os;
  os << "#include \"" << bench::op_header(d) << "\"\n";
  if (backend == DeviceType::cuda) os << "#include <cuda_runtime.h>\n";
  os << "\nnamespace {\n\nfk_status run(const void* raw, void* stream) {\n"
     << "  const auto& a = *static_cast<const fk::ops::" << (args.empty() ? "<Args>" : args) << "*>(raw);\n";
  if (backend == DeviceType::cuda)
    os << "  auto s = static_cast<cudaStream_t>(stream);\n  // launch on s; after each launch:\n"
       << "  // if (cudaGetLastError() != cudaSuccess) return FK_ERR_CUDA;\n  (void)a;\n  (void)s;\n";
  else
    os << "  (void)a;\n  (void)stream;\n";
  os << "  return FK_OK;\n}\n\n}  // namespace\n\nFK_EXPORT_CANDIDATE(" << d.name << ", run)\n";
  return os.str();
}

std::string workloads_table(const Task& t, const EvalResult* baseline) {
  std::ostringstream os;
  double total_calls = 0;
  for (const auto& w : t.workloads) total_calls += w.calls;
  for (const auto& w : t.workloads) {
    os << "- " << w.shape.dump() << "  calls " << w.calls << " (weight " << fmt("%.1f", 100 * w.calls / total_calls)
       << "%)";
    if (!w.label.empty()) os << "  [" << w.label << "]";
    if (const auto* r = result_for(baseline, w.shape)) {
      os << "  baseline " << fmt("%.2f", r->baseline.median_us) << " us";
      if (r->sol_baseline > 0) os << ", " << fmt("%.1f", 100 * r->sol_baseline) << "% of speed of light";
    }
    os << "\n";
  }
  if (!t.check_workloads.empty())
    os << "Plus " << t.check_workloads.size()
       << " check-only shapes that are never shown or timed: the code must handle any valid shape, not just these.\n";
  if (!baseline) os << "Baseline times: not measured in advance; every evaluation reports them beside yours.\n";
  return os.str();
}

std::string task_contract(const ContractInputs& in) {
  const Task& t = *in.task;
  const OpDef& d = t.op_def();
  const bool cuda = in.backend == DeviceType::cuda;
  std::ostringstream os;
  os << "# Task " << t.id << " (op " << d.name << ", level " << t.level << ", category " << t.category << ")\n"
     << "Semantics: " << d.summary << "\nUsed by: ";
  for (size_t i = 0; i < t.architectures.size(); ++i) os << (i ? ", " : "") << t.architectures[i];
  os << "\nArguments:";
  for (const auto& a : d.tensor_args) os << " " << a.name << " (" << role_name(a.role) << ")";
  os << "\n\n## Declaration (#include \"" << bench::op_header(d) << "\")\n```cpp\n"
     << bench::op_declaration(d) << "\n```\n\n## The ABI tensor type (fk/tensor_view.h; strides are in elements)\n```cpp\n"
     << slurp(bench::source_root() / "include" / "fk" / "tensor_view.h") << "```\n\n"
     << "## CPU reference (the correctness oracle runs it in double precision)\n```cpp\n" << reference_source(d)
     << "```\n\n## Production workloads (timed; the task's speedup is the call-weighted geometric mean)\n"
     << workloads_table(t, in.baseline) << "\n## Device\n" << in.device << "\n## Compile command\n```\n"
     << compile_command(in.backend) << "\n```\n\n## Headers you may include\n" << available_headers(in.backend);
  if (!t.forbid.empty()) {
    os << "Forbidden libraries (calling them is REWARD_HACK):";
    for (const auto& f : t.forbid) os << " " << f;
    os << "\n";
  }
  os << "\n## Rules the harness enforces\n"
     << "- Outputs are poisoned before every call and must be written completely; inputs (role in) must be left "
        "unchanged; NaN/Inf fail.\n"
     << "- Error against the double-precision oracle must be within the dtype's tolerance and not materially worse "
        "than the baseline's own error. Fresh random inputs and a secret seed every evaluation.\n"
     << "- " << (cuda ? "All work runs on the given `stream` and is finished or enqueued there when the function "
                        "returns: no other stream, no default stream, no host threads, no L2 persistence changes."
                      : "All work is done when the function returns: no host threads left running.")
     << "\n- Return FK_OK, or an fk_status error code (fk/status.h); never throw across the C ABI.\n"
     << "- Verdicts: PASSED, INCORRECT, REWARD_HACK, RUNTIME_ERROR, TIMEOUT, COMPILE_ERROR. The reward is 0 unless "
        "PASSED, then the speedup over the baseline.\n";
  os << "\n## Skeleton (compiles; export exactly this symbol)\n```" << (cuda ? "cuda" : "cpp") << "\n"
     << candidate_skeleton(t, in.backend) << "```\n";
  return os.str();
}

}  // namespace fk::agent
