// What the commands that run one Batch-pattern model from the command line (embed, detect,
// recommend, fold, classify) share: the device choice, the 16-bit model dtype and writing
// the result JSON (to stdout, or to --json-out with a line saying so). Each names the
// command in its errors.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "fk/dtype.h"

namespace fk::cli {

// "cpu" or "cuda"; "auto" is cuda where a device is visible. Other values are named errors.
std::string batch_device(const std::string& device, const char* command);

// The model dtype of "f16" or "bf16"; other values are named errors.
DType batch_dtype16(const std::string& dtype, const char* command);

// Prints `j` (indented), or writes it to `json_out` and prints `done` and where it went.
void emit_json(const nlohmann::json& j, const std::string& json_out, const char* command, const std::string& done);

}  // namespace fk::cli
