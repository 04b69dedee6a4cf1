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

// The value after `flag` on this process's command line, or "".
std::string command_line_value(const char* flag) {
  char buf[8192];
  const int fd = open("/proc/self/cmdline", O_RDONLY);
  if (fd < 0) return "";
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return "";
  buf[n] = 0;
  for (ssize_t i = 0; i < n;) {
    const size_t len = std::strlen(buf + i);
    if (std::strcmp(buf + i, flag) == 0 && i + static_cast<ssize_t>(len) + 1 < n) return buf + i + len + 1;
    i += static_cast<ssize_t>(len) + 1;
  }
  return "";
}

fk_status run(const void* raw, void*) {
  const std::string result = command_line_value("--result");
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
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  for (int64_t t = 0; t < a.out.shape[0]; ++t)
    for (int64_t h = 0; h < a.out.shape[1]; ++h) adv::store(a.out, t, h, 0.0f);
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
