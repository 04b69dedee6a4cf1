// `fk tensors PATH`: validates a safetensors file, sharded index or checkpoint directory
// and lists its tensors (name, dtype, shape, bytes, XXH64 checksum) with totals. Exits
// non-zero with the validation error when the checkpoint is malformed.
#include <cstdio>
#include <string>

#include "cli/command.h"
#include "core/safetensors/tensor_listing.h"

namespace fk::cli {
namespace {

void setup(CLI::App& app) {
  auto* cmd = app.add_subcommand("tensors", "Validate a safetensors checkpoint and list its tensors with checksums");
  static std::string path;
  static bool json = false, no_checksum = false;
  cmd->add_option("path", path, "A .safetensors file, a *.safetensors.index.json, or a checkpoint directory")
      ->required();
  cmd->add_flag("--json", json, "Print the listing as JSON");
  cmd->add_flag("--no-checksum", no_checksum, "Skip hashing the tensor data (validates the headers only)");
  cmd->callback([] {
    const auto listing = safetensors::list_tensors(path, !no_checksum);
    const std::string text = json ? safetensors::listing_to_json(listing).dump(2) + "\n"
                                  : safetensors::format_listing_text(listing);
    std::fwrite(text.data(), 1, text.size(), stdout);
  });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
