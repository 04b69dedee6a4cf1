#include <cstdio>

#include "cli/command.h"
#include "fk/op.h"
#include "fk/runtime.h"

namespace {
void setup(CLI::App& app) {
  auto* cmd = app.add_subcommand("version", "Print the version, the candidate ABI version and the build");
  cmd->callback([] {
    std::printf("fk %s\nabi %d\ncuda %s\n", FK_VERSION, FK_ABI_VERSION,
                fk::rt::built_with_cuda() ? "enabled" : "disabled (CPU-only build)");
  });
}
FK_CLI_COMMAND(setup);
}  // namespace
