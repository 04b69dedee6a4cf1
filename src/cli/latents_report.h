// What the commands whose result is latents (fk denoise, fk rollout) share: the model's load
// options, the summary's first fields and the line that says what ran, the latents'
// checksum, the line that prints it, the latents as safetensors (--out) and the summary JSON
// (--json-out).
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "models/model.h"
#include "models/registry.h"

namespace fk::cli {

// The options every latents command takes.
struct LatentsOptions {
  std::string model;  // each command's default preset
  std::string device = "auto";
  std::string dtype = "bf16";
  uint64_t weight_seed = 0;
  std::string out, json_out;
  std::vector<std::string> variants;

  // --model, --device, --dtype, --weight-seed, --out (described by out_help), --json-out, --variant.
  void add_to(CLI::App* cmd, const char* out_help);
  // Selects the variants and checks --dtype; returns the device, "cpu" or "cuda" (auto: cuda
  // where there is one). `command` names the command in errors.
  std::string resolve(const char* command) const;
};

// Device ("cpu", "cuda"), dtype ("bf16", "f16"), the checkpoint of `src` (none for a preset:
// dummy weights of `weight_seed`); the step limits are the command's to set.
models::LoadOptions latents_load_options(const models::ModelSource& src, const std::string& device,
                                         const std::string& dtype, uint64_t weight_seed);

// model, architecture, pattern, weights, device (with the GPU's description), dtype and the
// command line; prints "model M (architecture A, denoise) on D, T, W weights".
nlohmann::json latents_summary(const std::string& model, const models::ModelSource& src, const std::string& device,
                               const std::string& dtype);

// XXH64 of the latents' bytes, as hex.
std::string latents_checksum(const Tensor& latents);

// Prints "latents [R, C] checksum X", writes the latents (tensor 'latents') to `out` and
// `summary` to `json_out` where they are not empty; `command` names the command in errors.
void report_latents(const Tensor& latents, const std::string& checksum, const std::string& out,
                    const std::string& json_out, const nlohmann::json& summary, const char* command);

}  // namespace fk::cli
