// The `fk` command: see `fk --help`.
#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "core/error_words.h"
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
  // Errors print their words; with --verbose (before the command) also the failed check
  // and the source line that raised them.
  bool verbose = false;
  app.add_flag("--verbose", verbose, "Errors also name the check and the source line that raised them");
  for (auto setup : fk::cli::command_setups()) setup(app);
  auto report = [&](const char* what) {
    std::fprintf(stderr, "fk: error: %s\n", verbose ? what : fk::error_words(what).c_str());
    return 1;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    return report(e.what());
  }
  return 0;
}
