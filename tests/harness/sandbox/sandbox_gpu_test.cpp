// The CUDA driver inside the worker's sandbox: a process in the namespaces, behind the
// seccomp filter and the violation reporter a worker installs, starts the driver, moves
// memory both ways and synchronises. (This test binary runs itself as that process.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "fk/runtime.h"
#include "fk/status.h"
#include "harness/sandbox/seccomp_filter.h"
#include "harness/sandbox/subprocess.h"
#include "support/test_seed.h"

namespace fk::bench {
namespace {

namespace fs = std::filesystem;

constexpr const char* kChildEnv = "FK_SANDBOX_GPU_TEST_CHILD";

// The sandboxed side (skipped when run directly).
TEST(SandboxGpu, ChildSide) {
  const char* tmp = std::getenv("TMPDIR");
  if (!std::getenv(kChildEnv) || !tmp) GTEST_SKIP() << "runs inside the sandbox, started by CudaRunsInTheSandbox";
  ASSERT_EQ(install_violation_reporter((fs::path(tmp) / "violation").c_str()), 0);
  ASSERT_TRUE(rt::cuda_available());
  const size_t n = 1 << 20;
  std::vector<unsigned char> in(n, 7), out(n, 0);
  void* d = rt::device_malloc(n, 0);
  rt::memcpy_sync(d, Device::cuda(0), in.data(), Device::cpu(), n);
  void* pinned = rt::host_pinned_malloc(n);
  rt::memcpy_sync(pinned, Device::cpu(), d, Device::cuda(0), n);
  rt::memcpy_sync(out.data(), Device::cpu(), pinned, Device::cpu(), n);
  rt::device_synchronize(0);
  rt::host_pinned_free(pinned);
  rt::device_free(d);
  EXPECT_EQ(out, in);
}

TEST(SandboxGpu, CudaRunsInTheSandbox) {
  FK_REQUIRE_GPU();
  const fs::path work = fs::temp_directory_path() / concat("fk-sandbox-gpu-test-", getpid());
  fs::create_directories(work);
  ProcessOptions po;
  po.timeout_s = 120;
  po.sandbox = SandboxOptions{};
  po.sandbox->work_dir = work;
  // This binary and what it loads may lie in the temporary folder the sandbox replaces (a
  // build under /tmp), as the worker's do.
  po.sandbox->visible = running_code_paths();
  po.extra_env = {concat(kChildEnv, "=1")};
  const ProcessResult r = run_process({self_executable(), "--gtest_filter=SandboxGpu.ChildSide"}, po);
  std::string violation;
  std::getline(std::ifstream(work / "violation"), violation);
  fs::remove_all(work);
  EXPECT_EQ(r.sandbox_error, "");
  EXPECT_TRUE(r.exited() && r.exit_code == 0) << r.describe() << " in sandbox '" << r.sandbox
                                              << "'; forbidden call: '" << violation << "'\n"
                                              << r.output;
  EXPECT_NE(r.output.find("[  PASSED  ] 1 test"), std::string::npos) << r.output;
  std::printf("sandbox: %s\n", r.sandbox.c_str());
}

}  // namespace
}  // namespace fk::bench
