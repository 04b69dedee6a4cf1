#include "cli/latents_report.h"

#include <cstdio>
#include <fstream>

#include "core/safetensors/safetensors.h"
#include "fk/status.h"

namespace fk::cli {

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
