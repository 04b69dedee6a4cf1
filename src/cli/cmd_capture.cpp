// `fk capture`: run a model on a workload and record every op call as a task workload
// (src/harness/capture/capture.h): task files per op, plus a JSON summary of calls and time
// shares. Generate models run through the engine on requests; text encoders (Batch) run one
// batch pass (capture_batch.h); FLUX.1 (Denoise) one step of its loop (capture_denoise.h);
// detectors (YOLOv10) one forward (capture_detect.h); DLRM one forward over a batch of
// samples (capture_recommend.h); image classifiers one forward over a batch of images
// (capture_classify.h).
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli/command.h"
#include "cli/engine_options.h"
#include "harness/capture/capture.h"
#include "harness/capture/capture_batch.h"
#include "harness/capture/capture_classify.h"
#include "harness/capture/capture_denoise.h"
#include "harness/capture/capture_detect.h"
#include "harness/capture/capture_recommend.h"
#include "models/registry.h"

namespace fk::cli {
namespace {

struct CaptureCli {
  EngineOptions engine;
  std::string workload = "tiny";
  std::string out = "captured";
};

// The Batch pattern's text encoders: one batch pass (capture_batch.h's workloads).
e2e::CaptureResult capture_batch_model(const CaptureCli& o, const models::ModelSource& src, nlohmann::json& workload) {
  const engine::EngineConfig ec = o.engine.to_config();  // validates the options, selects --variant
  e2e::BatchCaptureOptions bo;
  bo.backend = ec.backend;
  bo.dtype = ec.dtype;
  bo.seed = o.engine.seed;
  const e2e::BatchWorkload w = e2e::batch_workload(o.workload);
  workload = {{"name", w.name}, {"sequence_lengths", w.lengths}};
  models::ModelSource source = src;
  if (o.engine.dummy_weights) source.checkpoint.clear();
  return e2e::capture_text_encoder(source, w, bo);
}

// FLUX.1 (Denoise): one step of the loop; detectors: one forward (their workloads' forms).
e2e::CaptureResult capture_image_model(const CaptureCli& o, const models::ModelSource& src, nlohmann::json& workload) {
  const engine::EngineConfig ec = o.engine.to_config();  // validates the options, selects --variant
  models::ModelSource source = src;
  if (o.engine.dummy_weights) source.checkpoint.clear();
  if (src.registration->pattern == models::RunPattern::denoise) {
    const e2e::DenoiseWorkload w = e2e::denoise_workload(o.workload);
    workload = w.to_json();
    return e2e::capture_denoise(source, w, {ec.backend, ec.dtype, o.engine.seed});
  }
  const e2e::DetectWorkload w = e2e::detect_workload(o.workload);
  workload = w.to_json();
  return e2e::capture_detector(source, w, {ec.backend, ec.dtype, o.engine.seed});
}

void run(const CaptureCli& o) {
  const models::ModelSource src = models::resolve_model(o.engine.model);
  nlohmann::json workload_json;
  e2e::CaptureResult r;
  std::string workload_name = o.workload;
  if (src.registration->pattern == models::RunPattern::denoise || e2e::is_detector(src)) {
    r = capture_image_model(o, src, workload_json);
  } else if (e2e::is_classifier(src)) {
    const engine::EngineConfig ec = o.engine.to_config();  // validates the options, selects --variant
    models::ModelSource source = src;
    if (o.engine.dummy_weights) source.checkpoint.clear();
    const e2e::ClassifyWorkload w = e2e::classify_workload(o.workload);
    workload_json = w.to_json();
    r = e2e::capture_classifier(source, w, {ec.backend, ec.dtype, o.engine.seed});
  } else if (e2e::is_recommender(src)) {
    const engine::EngineConfig ec = o.engine.to_config();  // validates the options, selects --variant
    models::ModelSource source = src;
    if (o.engine.dummy_weights) source.checkpoint.clear();
    const e2e::RecommendWorkload w = e2e::recommend_workload(o.workload);
    workload_json = w.to_json();
    r = e2e::capture_recommender(source, w, {ec.backend, ec.dtype, o.engine.seed});
  } else if (src.registration->pattern == models::RunPattern::batch) {
    r = capture_batch_model(o, src, workload_json);
  } else {
    const e2e::WorkloadSpec w = e2e::workload_spec(o.workload);
    r = e2e::capture_workload(o.engine.to_config(), w);
    workload_json = e2e::to_json(w);
    workload_name = w.name;
  }
  // A checkpoint folder is named by its last component ("Llama-3.1-8B"), a built-in by its name.
  const std::string model = std::filesystem::path(o.engine.model).filename().string();
  const auto files = e2e::write_task_files(r, model.empty() ? o.engine.model : model, workload_name, o.out);
  nlohmann::json summary = r.to_json();
  summary["command"] = invoked_command();
  summary["model"] = o.engine.model;
  summary["workload"] = workload_json;
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
  cmd->add_option("--workload", o.workload,
                  "Generate models: latency-1, latency-32, mixed, long, tiny, or a JSON file; "
                  "text encoders (Batch): tiny, mixed, or BxL sequences of tokens (e.g. 32x512); "
                  "FLUX.1 (Denoise): tiny, Npx or BxNpx (e.g. 1024px); detectors: tiny or BxS images (e.g. 1x640)")
      ->capture_default_str();
  cmd->add_option("--out", o.out, "Folder for <op>.json task files and capture.json")->capture_default_str();
  cmd->callback([] { run(o); });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
