// The `fk` command: see `fk --help`.
#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "fk/status.h"

namespace fk::cli {
std::vector<CommandSetup>& command_setups() {
  static std::vector<CommandSetup> setups;
  return setups;
}
namespace {
std::string& invoked() {
  static std::string s;
  return s;
}
}  // namespace
const std::string& invoked_command() { return invoked(); }
void set_invoked_command(int argc, char** argv) {
  std::string s = "fk";
  for (int i = 1; i < argc; ++i) s += std::string(" ") + argv[i];
  invoked() = s;
}
}  // namespace fk::cli

int main(int argc, char** argv) {
  // Line-buffered even into files and pipes: long evaluations report as they go, and a
  // run stopped by a time limit keeps what it printed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  fk::cli::set_invoked_command(argc, argv);
  CLI::App app{"fastkernels: a C++ kernel benchmark that is also the inference engine it measures", "fk"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("fk ") + FK_VERSION);
  for (auto setup : fk::cli::command_setups()) setup(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const fk::Error& e) {
    std::fprintf(stderr, "fk: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fk: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
