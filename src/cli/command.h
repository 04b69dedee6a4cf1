// Subcommands of `fk` register themselves here, one file per command (src/cli/cmd_*.cpp),
// so adding a command touches no shared file.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace fk::cli {

// Adds a subcommand (with its options and callback) to the app.
using CommandSetup = void (*)(CLI::App& app);

std::vector<CommandSetup>& command_setups();

// The command line `fk` was started with ("fk bench latency --batch-size 1"), for results
// files that record how they were made.
const std::string& invoked_command();
void set_invoked_command(int argc, char** argv);

struct CommandRegistrar {
  explicit CommandRegistrar(CommandSetup setup) { command_setups().push_back(setup); }
};

}  // namespace fk::cli

#define FK_CLI_COMMAND(SETUP) static ::fk::cli::CommandRegistrar FK_CLI_CONCAT(fk_cli_cmd_, __LINE__)(SETUP)
#define FK_CLI_CONCAT_INNER(a, b) a##b
#define FK_CLI_CONCAT(a, b) FK_CLI_CONCAT_INNER(a, b)
