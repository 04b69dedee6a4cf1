// The ends of the commands whose result is latents (fk denoise, fk rollout): their checksum,
// the line that prints it, the latents as safetensors (--out) and the summary JSON (--json-out).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "fk/tensor.h"

namespace fk::cli {

// XXH64 of the latents' bytes, as hex.
std::string latents_checksum(const Tensor& latents);

// Prints "latents [R, C] checksum X", writes the latents (tensor 'latents') to `out` and
// `summary` to `json_out` where they are not empty; `command` names the command in errors.
void report_latents(const Tensor& latents, const std::string& checksum, const std::string& out,
                    const std::string& json_out, const nlohmann::json& summary, const char* command);

}  // namespace fk::cli
