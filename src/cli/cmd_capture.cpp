// `fk capture`: run the engine on a workload and record every op call as a task workload
// (src/harness/capture/capture.h): task files per op, plus a JSON summary of calls and time shares.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli/command.h"
#include "cli/engine_options.h"
#include "harness/capture/capture.h"

namespace fk::cli {
namespace {

struct CaptureCli {
  EngineOptions engine;
  std::string workload = "tiny";
  std::string out = "captured";
};

void run(const CaptureCli& o) {
  const e2e::WorkloadSpec w = e2e::workload_spec(o.workload);
  const e2e::CaptureResult r = e2e::capture_workload(o.engine.to_config(), w);
  // A checkpoint folder is named by its last component ("Llama-3.1-8B"), a built-in by its name.
  const std::string model = std::filesystem::path(o.engine.model).filename().string();
  const auto files = e2e::write_task_files(r, model.empty() ? o.engine.model : model, w.name, o.out);
  nlohmann::json summary = r.to_json();
  summary["command"] = invoked_command();
  summary["model"] = o.engine.model;
  summary["workload"] = e2e::to_json(w);
  std::ofstream(std::filesystem::path(o.out) / "capture.json") << summary.dump(2) << "\n";
  std::printf("time from the %s\n%-30s %8s %10s %7s\n", r.time_source.c_str(), "op", "calls", "seconds", "share");
  for (const auto& c : r.ops)
    std::printf("%-30s %8lld %10.4f %6.1f%%\n", c.op.c_str(), static_cast<long long>(c.calls), c.total_seconds,
                r.total_seconds > 0 ? 100.0 * c.total_seconds / r.total_seconds : 0.0);
  std::printf("wrote %zu task files and capture.json to %s\n", files.size(), o.out.c_str());
}

void setup(CLI::App& app) {
  static CaptureCli o;
  auto* cmd = app.add_subcommand("capture", "Record the engine's op calls on a workload as task workloads");
  o.engine.add_to(cmd);
  cmd->add_option("--workload", o.workload, "latency-1, latency-32, mixed, long, tiny, or a JSON file")
      ->capture_default_str();
  cmd->add_option("--out", o.out, "Folder for <op>.json task files and capture.json")->capture_default_str();
  cmd->callback([] { run(o); });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
