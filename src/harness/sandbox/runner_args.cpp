#include "harness/sandbox/runner_args.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace fk::bench {

std::optional<RunnerArgs> parse_runner_args(int argc, char** argv) {
  if (argc < 3 || std::strcmp(argv[1], "kernels") != 0 || std::strcmp(argv[2], "runner") != 0) return std::nullopt;
  RunnerArgs a;
  try {
    for (int i = 3; i < argc; ++i) {
      const std::string flag = argv[i];
      if (flag == "--baseline") {
        a.baseline = true;
        continue;
      }
      if (i + 1 >= argc) return std::nullopt;
      const std::string value = argv[++i];
      if (flag == "--channel") a.channel = std::stoi(value);
      else if (flag == "--arena") a.arena = std::stoi(value);
      else if (flag == "--op") a.op = value;
      else if (flag == "--dir") a.dir = value;
      else if (flag == "--variants") a.variants = value;
      else if (flag == "--library") a.library = value;
      else return std::nullopt;
    }
  } catch (const std::exception&) {  // a descriptor that is no number
    return std::nullopt;
  }
  if (a.channel < 0 || a.arena < 0 || a.op.empty() || a.dir.empty() || a.baseline == !a.library.empty())
    return std::nullopt;
  return a;
}

std::string candidate_runner_program() {
  if (const char* env = std::getenv("FK_RUNNER"); env != nullptr && *env != 0) return env;
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "fk-runner";
  buf[n] = 0;
  const std::filesystem::path self = buf, beside = self.parent_path() / "fk-runner";
  std::error_code ec;
  return std::filesystem::exists(beside, ec) ? beside.string() : self.string();
}

}  // namespace fk::bench
