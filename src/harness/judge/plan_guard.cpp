#include "harness/judge/plan_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "fk/status.h"

namespace fk::bench {
namespace {

// 16 MiB of address space with no access: reserved once, never backed.
constexpr size_t kGuardBytes = size_t{16} << 20;
constexpr size_t kPage = 4096;

std::byte* guard() {
  static std::byte* const g = [] {
    void* p = mmap(nullptr, kGuardBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    FK_CHECK(p != MAP_FAILED, "plan guard: cannot reserve ", kGuardBytes, " bytes of address space: ",
             std::strerror(errno));
    return static_cast<std::byte*>(p);
  }();
  return g;
}

int g_findings_fd = -1;
constexpr char kFinding[] =
    "{\"verdict\":\"REWARD_HACK\",\"message\":\"the candidate's plan read tensor data: a plan is given the host "
    "mirrors of the metadata and its workspaces only (every other tensor points at a guard address)\"}\n";

void on_fault(int sig, siginfo_t* info, void*) {
  if (g_findings_fd >= 0 && in_plan_guard(info->si_addr)) {
    ssize_t unused = write(g_findings_fd, kFinding, sizeof(kFinding) - 1);
    (void)unused;
  }
  _exit(128 + sig);
}

}  // namespace

bool is_plan_input(const TensorArg& a) { return a.host_only || a.role == ArgRole::workspace; }

std::vector<std::byte> plan_only_args(const OpDef& def, const OpCase& c, std::byte* guard_region) {
  std::vector<std::byte> args = c.args;
  size_t page = 0;
  for (const TensorArg& a : def.tensor_args) {
    if (is_plan_input(a)) continue;
    auto* v = reinterpret_cast<TensorView*>(args.data() + a.offset);
    if (v->data == nullptr) continue;
    v->data = guard_region + (page++ * kPage) % kGuardBytes;
  }
  return args;
}

std::vector<std::byte> plan_only_args(const OpDef& def, const OpCase& c) { return plan_only_args(def, c, guard()); }

std::byte* plan_guard() { return guard(); }

bool in_plan_guard(const void* addr) {
  const auto* p = static_cast<const std::byte*>(addr);
  return p >= guard() && p < guard() + kGuardBytes;
}

void report_plan_guard_faults(int findings_fd) {
  (void)guard();  // reserved now, not inside the handler
  g_findings_fd = findings_fd;
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);
}

}  // namespace fk::bench
