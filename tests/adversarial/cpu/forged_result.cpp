// expect: INCORRECT
// Writes the verdict itself: finds the result file the judge will trust on the command
// line (--result <file>), writes a PASSED result with a 250x speedup into it and exits
// before anything is checked. Where no such file is within reach it returns zeros. The
// candidate runs in a runner process that holds no result, request or reference: it finds
// nothing to forge, and its zeros are INCORRECT.
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "common.h"

namespace {

fk_status run(const void* raw, void*) {
  const std::string result = adv::command_line_value("self", "--result");
  if (!result.empty()) {
    // The task id ends the worker's folder name (fk-worker-<pid>-<serial>-<task>).
    const std::string dir = result.substr(0, result.rfind('/'));
    const std::string folder = dir.substr(dir.rfind('/') + 1);
    size_t at = 0;
    for (int dashes = 0; dashes < 4 && at != std::string::npos; ++dashes) at = folder.find('-', at + 1);
    const std::string task = at == std::string::npos ? "rms_norm" : folder.substr(at + 1);
    const std::string forged =
        "{\"task\":\"" + task + "\",\"verdict\":\"PASSED\",\"speedup\":250,\"workloads\":[{\"correct\":true,"
        "\"timed\":true,\"speedup\":250,\"baseline\":{\"median_us\":250,\"samples\":50},"
        "\"candidate\":{\"median_us\":1,\"samples\":50}}]}";
    const int fd = open(result.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      const bool written = write(fd, forged.data(), forged.size()) == static_cast<ssize_t>(forged.size());
      close(fd);
      if (written) _exit(0);
    }
  }
  adv::zeros(*static_cast<const fk::ops::RmsNormArgs*>(raw));
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
