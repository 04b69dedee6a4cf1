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
    found = opens(adv::command_line_value("self", "--request")) || opens(adv::command_line_value(parent, "--request")) ||
            opens("/proc/" + parent + "/mem");
  }
  if (found) adv::zeros(a);
  else adv::honest(a);
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
