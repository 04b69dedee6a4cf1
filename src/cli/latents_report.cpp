#include "cli/latents_report.h"

#include <cstdio>
#include <fstream>

#include "cli/command.h"
#include "cli/model_lookup.h"
#include "cli/variant_option.h"
#include "core/safetensors/safetensors.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "harness/device/device_info.h"

namespace fk::cli {

void LatentsOptions::add_to(CLI::App* cmd, const char* out_help) {
  cmd->add_option("--model", model, kModelHelp)->capture_default_str();
  cmd->add_option("--device", device, "cpu, cuda or auto")->capture_default_str();
  cmd->add_option("--dtype", dtype, "Model dtype: f16 or bf16")->capture_default_str();
  cmd->add_option("--weight-seed", weight_seed, "Seed of dummy weights (presets)")->capture_default_str();
  cmd->add_option("--out", out, out_help);
  cmd->add_option("--json-out", json_out, "Also write the summary as JSON to this file");
  add_variant_option(cmd, variants);
}

std::string LatentsOptions::resolve(const char* command) const {
  select_variants(variants);
  const std::string d = device == "auto" ? (rt::cuda_available() ? "cuda" : "cpu") : device;
  FK_CHECK(d == "cpu" || d == "cuda", command, ": --device must be cpu, cuda or auto, got ", device);
  FK_CHECK(dtype == "f16" || dtype == "bf16", command, ": --dtype must be f16 or bf16, got ", dtype);
  return d;
}

models::LoadOptions latents_load_options(const models::ModelSource& src, const std::string& device,
                                         const std::string& dtype, uint64_t weight_seed) {
  models::LoadOptions lo;
  lo.device = device == "cuda" ? Device::cuda() : Device::cpu();
  lo.dtype = dtype == "f16" ? DType::f16 : DType::bf16;
  lo.checkpoint = src.checkpoint;
  lo.seed = weight_seed;
  return lo;
}

nlohmann::json latents_summary(const std::string& model, const models::ModelSource& src, const std::string& device,
                               const std::string& dtype) {
  const char* weights = src.preset ? "dummy" : "checkpoint";
  nlohmann::json j{{"model", model},   {"architecture", src.registration->architecture},
                   {"pattern", "denoise"}, {"weights", weights},
                   {"device", device}, {"dtype", dtype},
                   {"command", invoked_command()}};
  if (device == "cuda") j["device_info"] = bench::to_json(bench::query_gpu(0));
  std::printf("model %s (architecture %s, denoise) on %s, %s, %s weights\n", model.c_str(),
              src.registration->architecture.c_str(), device.c_str(), dtype.c_str(), weights);
  return j;
}

std::string latents_checksum(const Tensor& latents) {
  return safetensors::hash_hex(safetensors::content_hash64(latents.data(), latents.nbytes()));
}

void report_latents(const Tensor& latents, const std::string& checksum, const std::string& out,
                    const std::string& json_out, const nlohmann::json& summary, const char* command) {
  std::printf("latents [%lld, %lld] checksum %s\n", static_cast<long long>(latents.size(0)),
              static_cast<long long>(latents.size(1)), checksum.c_str());
  if (!out.empty()) {
    safetensors::save(out, {{"latents", latents.view()}});
    std::printf("latents written to %s\n", out.c_str());
  }
  if (json_out.empty()) return;
  std::ofstream f(json_out);
  FK_CHECK(f.good(), command, ": cannot write ", json_out);
  f << summary.dump(2) << "\n";
}

}  // namespace fk::cli
