#include "harness/sandbox/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace fk::bench {

namespace fs = std::filesystem;

namespace {

// The kernel's Landlock ABI (include/uapi/linux/landlock.h), spelled out: the C headers
// of a build host may predate the parts used here.
constexpr long kCreateRuleset = 444, kAddRule = 445, kRestrictSelf = 446;  // every architecture
constexpr uint32_t kCreateRulesetVersion = 1u << 0;
constexpr int kRulePathBeneath = 1;
constexpr uint64_t kScopeSignal = 1u << 1;  // ABI 6: no signals to processes outside the domain
constexpr uint64_t kWriteFile = 1u << 1, kReadFile = 1u << 2, kReadDir = 1u << 3, kRemoveDir = 1u << 4,
                   kRemoveFile = 1u << 5, kMakeChar = 1u << 6, kMakeDir = 1u << 7, kMakeReg = 1u << 8,
                   kMakeSock = 1u << 9, kMakeFifo = 1u << 10, kMakeBlock = 1u << 11, kMakeSym = 1u << 12,
                   kRefer = 1u << 13,     // ABI 2
                   kTruncate = 1u << 14;  // ABI 3
// Rights that apply to a file (the others need a folder).
constexpr uint64_t kFileRights = kWriteFile | kReadFile | kTruncate;
constexpr uint64_t kRead = kReadFile | kReadDir;
constexpr uint64_t kAll = kWriteFile | kReadFile | kReadDir | kRemoveDir | kRemoveFile | kMakeChar | kMakeDir |
                          kMakeReg | kMakeSock | kMakeFifo | kMakeBlock | kMakeSym | kRefer | kTruncate;

struct RulesetAttr {
  uint64_t handled_access_fs, handled_access_net, scoped;  // later fields zero: older kernels accept them
};
struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};

// What the kernel of this ABI handles: execution is never restricted (not handled).
uint64_t handled(int abi) {
  uint64_t h = kAll & ~(kRefer | kTruncate);
  if (abi >= 2) h |= kRefer;
  if (abi >= 3) h |= kTruncate;
  return h;
}

bool is_ancestor(const fs::path& a, const fs::path& p) {
  auto [ai, pi] = std::mismatch(a.begin(), a.end(), p.begin(), p.end());
  return ai == a.end();
}

}  // namespace

int landlock_abi() {
  const long v = syscall(kCreateRuleset, nullptr, 0, kCreateRulesetVersion);
  return v > 0 ? static_cast<int>(v) : 0;
}

std::vector<LandlockRule> landlock_rules(const fs::path& work_dir, const fs::path& temp_root,
                                         const std::vector<fs::path>& visible, const std::vector<std::string>& devices) {
  std::vector<LandlockRule> rules;
  auto read_rule = [&](const fs::path& p) {
    std::error_code ec;
    rules.push_back({p.string(), fs::is_directory(p, ec) ? kRead : kReadFile});
  };
  // Everything beside the path down to the temporary folder can be read; a rule for a
  // folder holds for all beneath it, so the temporary folder's own entries get none.
  fs::path at = temp_root.root_path();
  for (const fs::path& part : temp_root.relative_path()) {
    const fs::path next = at / part;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(at, ec))
      if (e.path() != next) read_rule(e.path());
    at = next;
  }
  rules.push_back({work_dir.string(), kAll});
  for (const fs::path& v : visible) {
    std::error_code ec;
    if (fs::exists(v, ec) && is_ancestor(temp_root, v) && !is_ancestor(work_dir, v)) read_rule(v);
  }
  rules.push_back({"/dev/shm", kAll});
  // The CUDA driver names its threads through /proc/self/task/<tid>/comm and does not start
  // where it cannot. apply_landlock opens this path in the worker itself (before exec, which
  // keeps the PID): the rule covers the worker's own threads, no other process.
  rules.push_back({"/proc/self/task", kRead | kWriteFile | kTruncate});
  for (const std::string& d : devices) {
    std::error_code ec;
    rules.push_back({d, fs::is_directory(d, ec) ? kRead | kWriteFile | kTruncate : kReadFile | kWriteFile | kTruncate});
  }
  return rules;
}

int apply_landlock(const std::vector<LandlockRule>& rules, int abi) {
  const uint64_t h = handled(abi);
  // Without a PID namespace, a worker could signal the harness or other workers of its user
  // (root without capabilities may still kill root's processes); kernels with ABI 6 forbid it.
  RulesetAttr attr{h, 0, abi >= 6 ? kScopeSignal : 0};
  const int ruleset = static_cast<int>(syscall(kCreateRuleset, &attr, sizeof(attr), 0));
  if (ruleset < 0) return errno;
  for (const LandlockRule& r : rules) {
    const int fd = open(r.path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) continue;  // gone since the plan: nothing to allow
    PathBeneathAttr pb{r.access & h, fd};
    // A rule on a file takes the file rights only.
    if (syscall(kAddRule, ruleset, kRulePathBeneath, &pb, 0) != 0 && errno == EINVAL) {
      pb.allowed_access &= kFileRights;
      syscall(kAddRule, ruleset, kRulePathBeneath, &pb, 0);
    }
    close(fd);
  }
  int err = 0;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(kRestrictSelf, ruleset, 0) != 0) err = errno;
  close(ruleset);
  return err;
}

}  // namespace fk::bench
