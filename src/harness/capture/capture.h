// Workload capture (`fk capture`): run the engine on a workload with an observer on the op
// registry, and turn every op call into the task workload it corresponds to (the op's own
// workload fields: the shapes, dtypes and attributes its make_case takes), counted and
// timed. The result is written as task files, so tasks get their shapes from the engine
// rather than from hand-written tables.
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fk/op_registry.h"
#include "harness/e2e/workload.h"
#include "serving/generate/engine.h"

namespace fk::e2e {

// The task workload (an op's make_case fields) of one call, from the op's own
// workload_from_call, or nullopt for an op without one (its calls are still counted and
// timed, under "untranslated").
std::optional<nlohmann::json> workload_of_call(const OpDef& def, const void* args);

struct CapturedOp {
  std::string op;
  std::string level;  // the op definition's
  std::map<std::string, std::pair<nlohmann::json, int64_t>> workloads;  // shape.dump() -> (shape, calls)
  std::map<std::string, double> seconds;       // shape.dump() -> time in the op (GPU time when traced)
  std::map<std::string, double> wall_seconds;  // shape.dump() -> wall time of the synchronised calls
  int64_t calls = 0;
  // Time in the op's calls, their nested calls included (a layer op's parts); of that, the
  // calls no other observed call enclosed (their sum over ops is the capture's total).
  double total_seconds = 0, total_wall_seconds = 0, top_level_seconds = 0;
};

struct CaptureResult {
  std::vector<CapturedOp> ops;  // by time, largest first
  double total_seconds = 0;     // time in ops: the calls the engine made, each counted once
  // "kernel trace": `seconds` are the kernels' GPU time; "wall clock": the calls' wall time
  // (CPU runs, or a CUDA build without CUPTI).
  std::string time_source = "wall clock";
  std::string category;  // the captured model's benchmark category (model_category)
  nlohmann::json to_json() const;
};

// Records every op call `run` makes through the op registry (its call observer), timed by a
// kernel trace on a GPU (`on_gpu` with CUPTI), else by wall clock, and files the result
// under the benchmark `category`. Each run pattern's driver (below, capture_batch.h) calls it.
CaptureResult capture_calls(const std::function<void()>& run, bool on_gpu, std::string category);

// Runs `workload` on an engine made from `config` (forced eager: graphs cannot be observed).
// A fused op that the registry runs as its parts (a part has a candidate, or the op's
// "unfused" variant is selected) is recorded as those parts: the observer sees what ran.
CaptureResult capture_workload(engine::EngineConfig config, const WorkloadSpec& workload);

// A positive count spelled by `text`, a part of a workload name (the 32 of "32x512");
// throws `refusal` (the workload and the forms it may take) when it is not one.
int64_t workload_count(std::string_view text, const std::string& refusal);

// One task file per translated op (<dir>/<op>.json): its captured workloads with call counts,
// labelled with the model, the workload and the share of op time.
std::vector<std::filesystem::path> write_task_files(const CaptureResult& r, const std::string& model,
                                                    const std::string& workload, const std::filesystem::path& dir);

}  // namespace fk::e2e
