// The sandbox a worker process runs in (run_process with ProcessOptions::sandbox):
//
//   - its own PID, mount, network and IPC namespaces (and a user namespace where the
//     harness is not root). The worker is PID 2 under a tiny init (PID 1); when the worker
//     ends, init ends, and the kernel kills everything left in the namespace: no process a
//     candidate started survives the evaluation;
//   - a mount namespace where every mount is read-only (caches, tuning records, the source
//     tree, the home folder) except the worker's own folder, which TMPDIR names; the
//     temporary folder holding it is replaced by an empty read-only one that shows only it
//     (other workers' request and result files are invisible); /dev/shm is a private
//     scratch that vanishes with the namespace; /dev holds only the basic nodes and
//     /dev/nvidia* (the CUDA driver needs them); /proc shows the namespace's processes
//     only, and only their folders are writable (the CUDA driver writes its threads' names);
//   - no network (an empty network namespace: loopback only, down);
//   - no capabilities, no_new_privs, and the seccomp filter of seccomp_filter.h;
//   - rlimits on CPU time and address space, no core dumps.
//
// Where the host gives no namespaces (no privileges, user namespaces disabled), the worker
// runs with the seccomp filter and a Landlock ruleset (landlock.h: its files confined as
// above, but processes and network not namespaced), or with the filter alone, and where
// not even that works, without a sandbox: sandbox_support().describe() says which, and
// every result records it.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/sandbox/landlock.h"

namespace fk::bench {

struct SandboxOptions {
  std::filesystem::path work_dir;  // the worker's folder: the one place it may write (required)
  // Host paths kept visible (read-only) even where they lie in the replaced temporary
  // folder, e.g. a candidate library compiled into a cache there.
  std::vector<std::filesystem::path> visible;
  double cpu_seconds = 0;     // RLIMIT_CPU, all threads together (0: none)
  uint64_t memory_bytes = 0;  // RLIMIT_AS (0: none)
  bool seccomp = true;        // false: namespaces only (the sandbox's own tests)
  // Started from inside a worker's sandbox (a candidate runner): no namespaces of its own
  // (it shares the worker's), its files confined by Landlock, and the seccomp filter.
  bool nested = false;
};

struct SandboxSupport {
  bool namespaces = false;      // pid, mount, network, ipc namespaces can be made
  bool user_namespace = false;  // ...through a user namespace (the harness is not root)
  bool seccomp = false;         // the system-call filter can be installed
  int landlock_abi = 0;         // without namespaces: files confined by Landlock (0: not)
  std::string reason;           // what is missing and why ("" when both work)
  // "namespaces+seccomp", "landlock+seccomp: <reason>", "seccomp only: <reason>" or
  // "none: <reason>".
  std::string describe() const;
};

// What this host gives, probed once per process by setting up a sandbox for real.
// FK_SANDBOX=off turns the sandbox off ("none: disabled by FK_SANDBOX=off");
// FK_SANDBOX=no-namespaces skips the namespaces (a host whose GPU driver needs that).
const SandboxSupport& sandbox_support();
// What a nested sandbox (SandboxOptions::nested) gets: the seccomp filter and Landlock where
// the kernel has it, never namespaces; nothing with FK_SANDBOX=off. Not probed: the worker
// it is started from already runs in the sandbox this host gives.
SandboxSupport nested_sandbox_support();

// What run_process needs to start a sandboxed child; built before fork, used between
// fork and exec (no allocation there).
struct SandboxPlan {
  bool namespaces = false, user_namespace = false, seccomp = false;
  int landlock_abi = 0;                      // > 0: apply landlock_rules (no namespaces)
  std::vector<LandlockRule> landlock_rules;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string work_dir, temp_root;
  struct Node {
    std::string path;         // under /dev, or a visible path
    std::string link_target;  // non-empty: recreate as this symlink
    bool is_dir = false;
    std::vector<std::string> parents;  // folders to create first (visible paths in the temp root)
  };
  std::vector<Node> devices;  // the /dev the sandbox shows
  std::vector<Node> visible;  // visible paths inside the replaced temp root
  uint64_t cpu_seconds = 0, memory_bytes = 0;
  int cap_last = 63;
  std::string description;  // sandbox_support().describe() (or the options' narrowing of it)
};

// Throws fk::Error naming what is wrong (no work folder, a temp root of "/").
SandboxPlan plan_sandbox(const SandboxOptions& opts, const SandboxSupport& support);

// The child side, after fork (process group, stdio and working folder already set): enters
// the sandbox and execs argv. Setup failures go to report_fd as 'E<message>'; the
// worker's wait status goes there as 'S<int>' once it ended (the namespace's init
// reports it). Never returns. A null argv exits 0 once the sandbox is up (the probe).
[[noreturn]] void exec_in_sandbox(const SandboxPlan& plan, int report_fd, char* const argv[], char* const envp[]);

// The parent side: what the report pipe said (read after the child was reaped).
struct SandboxReport {
  bool has_status = false;
  int status = 0;       // the worker's wait status (waitpid), valid when has_status
  std::string error;    // the sandbox could not be set up
  std::string note;     // a weaker sandbox than planned (e.g. the host /proc stayed visible)
};
SandboxReport read_sandbox_report(int fd);

}  // namespace fk::bench
