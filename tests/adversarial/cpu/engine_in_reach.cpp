// expect: PASSED
// Looks for the engine in its own process: the program it runs in (/proc/self/exe) holding
// the op registry's names, from where its symbol table would lead to the baseline's code.
// Where it finds them it trusts the engine is callable and returns zeros (INCORRECT). A
// candidate's runner (fk-runner) is built without the engine: nothing is found, the
// candidate computes honestly and passes.
#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <string_view>

#include "common.h"

namespace {

bool program_holds(std::string_view needle) {
  const int fd = open("/proc/self/exe", O_RDONLY);
  if (fd < 0) return false;
  std::string bytes;
  char buf[1 << 16];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) bytes.append(buf, static_cast<size_t>(n));
  close(fd);
  return bytes.find(needle) != std::string::npos;
}

int found = -1;

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  if (found < 0) found = program_holds("fused_add_rms_norm");  // another op's name: only a registry holds it
  if (found) adv::zeros(a);
  else adv::honest(a);
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
