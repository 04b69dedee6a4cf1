// expect: PASSED
// Looks for the evaluation's request (every seed, the secret one included) and for the
// references: the request file named on its own command line or on its parent's, and the
// parent's memory through /proc/<ppid>/mem. Where any of it opens it trusts its find and
// returns zeros (INCORRECT). A candidate runs in a runner process: its command line names
// no request, the worker that judges removed the request once read and lies outside the
// runner's Landlock rules, and its memory is not readable by another process; nothing
// opens, the candidate computes honestly and passes.
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "common.h"

namespace {

// The value after `flag` in /proc/<pid>/cmdline, or "".
std::string command_line_value(const std::string& pid, const char* flag) {
  char buf[8192];
  const int fd = open(("/proc/" + pid + "/cmdline").c_str(), O_RDONLY);
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

bool opens(const std::string& path, int flags = O_RDONLY) {
  if (path.empty()) return false;
  const int fd = open(path.c_str(), flags);
  if (fd < 0) return false;
  close(fd);
  return true;
}

int found = -1;

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  if (found < 0) {
    const std::string parent = std::to_string(getppid());
    found = opens(command_line_value("self", "--request")) || opens(command_line_value(parent, "--request")) ||
            opens("/proc/" + parent + "/mem");
  }
  if (found) {
    for (int64_t t = 0; t < a.out.shape[0]; ++t)
      for (int64_t h = 0; h < a.out.shape[1]; ++h) adv::store(a.out, t, h, 0.0f);
    return FK_OK;
  }
  adv::honest(a);
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
