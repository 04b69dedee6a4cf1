// `fk env [--json] [--measure]`: the machine (host and GPUs) and the device ceilings every
// benchmark report is related to. --measure measures them on one GPU and stores them.
#include <cstdio>
#include <iostream>

#include "harness/device/ceilings.h"
#include "harness/device/device_info.h"
#include "cli/command.h"

namespace fk::cli {
namespace {

struct EnvOptions {
  bool json = false;
  bool measure = false;
  bool quick = false;
  int device = 0;
};

// Stored ceilings of a GPU as JSON (null when none; the error text when unreadable).
nlohmann::json stored_ceilings_json(const std::string& name) {
  try {
    auto c = bench::load_ceilings(name);
    return c ? bench::to_json(*c) : nlohmann::json(nullptr);
  } catch (const Error& e) {
    return {{"error", e.what()}};
  }
}

void print_env(const EnvOptions& o) {
  const bench::EnvReport env = bench::query_env();
  if (o.json) {
    nlohmann::json j = bench::to_json(env);
    for (auto& g : j["gpus"]) g["ceilings"] = stored_ceilings_json(g["name"].get<std::string>());
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << bench::format_env(env);
  for (const auto& g : env.gpus) {
    try {
      if (auto c = bench::load_ceilings(g.name)) {
        std::cout << bench::format_ceilings(*c);
      } else {
        std::cout << "gpu " << g.index << ": " << bench::kNoCeilingsHint << "\n";
      }
    } catch (const Error& e) {
      std::cout << "gpu " << g.index << ": stored ceilings unreadable: " << e.what() << "\n";
    }
  }
}

void measure(const EnvOptions& o) {
  bench::MeasureOptions m = o.quick ? bench::MeasureOptions::quick() : bench::MeasureOptions{};
  m.device = o.device;
  m.progress = [](const std::string& line) { std::fprintf(stderr, "fk env: %s\n", line.c_str()); };
  const bench::DeviceCeilings c = bench::measure_ceilings(m);
  std::string stored = "not stored (--quick measures small sizes only)";
  if (!o.quick) stored = bench::save_ceilings(c).string();
  if (o.json) {
    nlohmann::json j = bench::to_json(c);
    j["stored_in"] = stored;
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << bench::format_ceilings(c) << "stored in " << stored << "\n";
}

void setup(CLI::App& app) {
  auto* cmd = app.add_subcommand("env", "The host, its GPUs and their measured ceilings (--measure to measure them)");
  static EnvOptions o;
  cmd->add_flag("--json", o.json, "Print JSON");
  cmd->add_flag("--measure", o.measure,
                "Measure the GPU's ceilings (copy bandwidth, bf16/fp8 GEMM, fp32 FMA) and store them");
  cmd->add_option("--device", o.device, "GPU to measure (default 0)");
  cmd->add_flag("--quick", o.quick, "With --measure: small sizes, a check that measuring works; stores nothing");
  cmd->callback([] {
    if (o.measure) measure(o);
    else print_env(o);
  });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
