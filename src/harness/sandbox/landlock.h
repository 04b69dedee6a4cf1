// The sandbox's file confinement where the host gives no namespaces (sandbox.h): a
// Landlock ruleset (Linux 5.13+, unprivileged), written here against the kernel's ABI.
// Reads are allowed everywhere except in the temporary folder holding the worker's
// folder, where only that folder and the given visible paths can be read (other workers'
// request and result files cannot); writes only in the worker's folder, /dev/shm and the
// device nodes the worker needs. Where the kernel can (Landlock ABI 6), it cannot signal
// processes outside its ruleset either (the harness, other workers).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace fk::bench {

struct LandlockRule {
  std::string path;
  uint64_t access = 0;  // LANDLOCK_ACCESS_FS_* bits; trimmed to the kernel's ABI when applied
};

// The kernel's Landlock ABI version, or 0 where there is none (disabled, too old).
int landlock_abi();

// The rules for a worker folder in temp_root; devices are the /dev nodes it may write.
std::vector<LandlockRule> landlock_rules(const std::filesystem::path& work_dir, const std::filesystem::path& temp_root,
                                         const std::vector<std::filesystem::path>& visible,
                                         const std::vector<std::string>& devices);

// Restricts the calling process (and what it execs) to the rules. Sets no_new_privs.
// Returns 0 or an errno. Async-signal-safe: callable between fork and exec.
int apply_landlock(const std::vector<LandlockRule>& rules, int abi);

}  // namespace fk::bench
