// What the commands that run one Batch-pattern model from the command line (embed, detect,
// recommend, fold, classify) share: the device choice, the 16-bit model dtype, timing the
// model's run (--iters) and writing the result JSON (to stdout, or to --json-out with a line
// saying so). Each names the command in its errors.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fk/dtype.h"

namespace fk::cli {

// "cpu" or "cuda"; "auto" is cuda where a device is visible. Other values are named errors.
std::string batch_device(const std::string& device, const char* command);

// The model dtype of "f16" or "bf16"; other values are named errors.
DType batch_dtype16(const std::string& dtype, const char* command);

// The images of a run: the --image files' count, else --batch (-1: unset, 1). Refuses a
// --batch below 1 or one that disagrees with the files.
int64_t image_batch(int64_t batch, const std::vector<std::string>& image_files, const char* command);

// The seconds of `run` as --iters asks (at least 1): with 1, one run, cold, so that a
// single invocation costs one run and reports what it took, lazy set-up included; with
// more, one untimed warm-up (leaving that set-up out), then the median of `iters` timed
// runs (the middle run's own time, the upper middle for an even count), which an odd slow
// run does not move. `run` must finish its device work before it returns (as
// harness/time/timed_calls.h times it).
double median_run_seconds(int64_t iters, const std::function<void()>& run);

// Prints `j` (indented), or writes it to `json_out` and prints `done` and where it went.
void emit_json(const nlohmann::json& j, const std::string& json_out, const char* command, const std::string& done);

}  // namespace fk::cli
