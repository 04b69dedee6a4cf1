#include "harness/sandbox/sandbox.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "fk/status.h"
#include "harness/sandbox/subprocess.h"

namespace fk::bench {
namespace {

namespace fs = std::filesystem;

#define REQUIRE_NAMESPACES()                                                                           \
  if (!sandbox_support().namespaces)                                                                   \
  GTEST_SKIP() << "this host gives no namespaces, so the sandbox runs without them: "                 \
               << sandbox_support().describe()

// A worker folder in the temporary folder, as run_in_worker makes one; removed at the end.
struct WorkDir {
  fs::path path;
  explicit WorkDir(const std::string& name) {
    static int serial = 0;
    path = fs::temp_directory_path() / concat("fk-sandbox-test-", getpid(), "-", serial++, "-", name);
    fs::create_directories(path);
  }
  ~WorkDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The namespaces' own tests run shell scripts, whose every command is a fork: the filter
// (tested in FilterStopsAFork and seccomp_filter_test) is off unless a test turns it on.
SandboxOptions no_filter() {
  SandboxOptions so;
  so.seccomp = false;
  return so;
}

ProcessResult sandboxed(const WorkDir& w, const std::string& script, SandboxOptions so = no_filter(),
                        double timeout_s = 20) {
  ProcessOptions po;
  po.timeout_s = timeout_s;
  so.work_dir = w.path;
  po.sandbox = so;
  return run_process({"sh", "-c", script}, po);
}

TEST(Sandbox, DescribesWhatTheHostGives) {
  SandboxSupport s;
  s.reason = "no namespaces (x)";
  s.seccomp = true;
  EXPECT_EQ(s.describe(), "seccomp only: no namespaces (x)");
  s.seccomp = false;
  EXPECT_EQ(s.describe(), "none: no namespaces (x)");
  s = {};
  s.namespaces = s.seccomp = true;
  EXPECT_EQ(s.describe(), "namespaces+seccomp");
  // Whatever this host gives, it says so.
  EXPECT_FALSE(sandbox_support().describe().empty());
}

TEST(Sandbox, OwnPidNamespaceNetworkAndTemporaryFolder) {
  REQUIRE_NAMESPACES();
  WorkDir w("ns");
  const fs::path sibling = w.path.parent_path() / concat("fk-sandbox-test-sibling-", getpid());
  std::ofstream(sibling) << "another worker's request";
  const ProcessResult r = sandboxed(w, concat("echo pid=$$; echo ppid=$PPID; ls -a ", w.path.parent_path().string(),
                                              "; cat /proc/net/dev; ls /proc"));
  fs::remove(sibling);
  ASSERT_TRUE(r.exited() && r.exit_code == 0) << r.describe() << r.output << r.sandbox_error;
  EXPECT_EQ(r.sandbox, "namespaces+seccomp (seccomp off)");
  // The shell is the worker: PID 2 under the namespace's init.
  EXPECT_NE(r.output.find("pid=2\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ppid=1\n"), std::string::npos) << r.output;
  // Its own folder in a private temporary folder; the other worker's file is not there.
  EXPECT_NE(r.output.find(w.path.filename().string()), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(sibling.filename().string()), std::string::npos) << r.output;
  // The network namespace has the loopback interface only.
  std::istringstream lines(r.output);
  std::string line;
  int interfaces = 0;
  while (std::getline(lines, line))
    if (line.find(':') != std::string::npos && line.find('|') == std::string::npos) {
      ++interfaces;
      EXPECT_NE(line.find("lo:"), std::string::npos) << "an interface besides loopback: " << line;
    }
  EXPECT_EQ(interfaces, 1) << r.output;
  // /proc shows the namespace's processes: 1 (init), 2 (the shell), its ls.
  EXPECT_EQ(r.output.find(concat("\n", getpid(), "\n")), std::string::npos) << "the harness is visible";
}

TEST(Sandbox, WritesOnlyInItsFolder) {
  REQUIRE_NAMESPACES();
  WorkDir w("rw");
  const fs::path outside = fs::current_path() / concat("fk-sandbox-test-outside-", getpid());
  const ProcessResult r = sandboxed(w, concat("touch $TMPDIR/inside && echo wrote-inside; touch ",
                                              (w.path.parent_path() / "beside").string(),
                                              " 2>/dev/null && echo wrote-beside; touch ",
                                              outside.string(), " 2>/dev/null && echo wrote-outside; touch $HOME/",
                                              outside.filename().string(), " 2>/dev/null && echo wrote-home; echo x > /dev/null && echo dev-null"));
  ASSERT_TRUE(r.exited() && r.exit_code == 0) << r.describe() << r.output << r.sandbox_error;
  EXPECT_NE(r.output.find("wrote-inside"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(w.path / "inside"));
  EXPECT_EQ(r.output.find("wrote-beside"), std::string::npos) << r.output;  // not even in the private temp folder
  EXPECT_EQ(r.output.find("wrote-outside"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(outside));
  EXPECT_EQ(r.output.find("wrote-home"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dev-null"), std::string::npos) << r.output;
  std::error_code ec;
  fs::remove(outside, ec);
}

// The CUDA driver writes its threads' names (/proc/self/task/<tid>/comm) and does not start
// where it cannot; the rest of /proc stays read-only. The sysctl write puts back the value
// it read: harmless even where the sandbox failed to stop it.
constexpr const char* kProcWrites =
    "echo worker > /proc/self/task/$$/comm && echo named-thread; "
    "v=$(cat /proc/sys/vm/swappiness); echo $v 2>/dev/null > /proc/sys/vm/swappiness && echo wrote-sysctl; "
    "cat /proc/1/environ >/dev/null 2>&1 && echo read-init; true";

TEST(Sandbox, ProcIsWritableOnlyInItsOwnProcesses) {
  REQUIRE_NAMESPACES();
  WorkDir w("proc");
  const ProcessResult r = sandboxed(w, kProcWrites);
  ASSERT_TRUE(r.exited() && r.exit_code == 0) << r.describe() << r.output << r.sandbox_error;
  EXPECT_NE(r.output.find("named-thread"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("wrote-sysctl"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("read-init"), std::string::npos) << r.output;  // init is not dumpable
}

TEST(Sandbox, DevHoldsOnlyTheNodesAWorkerNeeds) {
  REQUIRE_NAMESPACES();
  WorkDir w("dev");
  const ProcessResult r = sandboxed(w, "ls /dev");
  ASSERT_TRUE(r.exited() && r.exit_code == 0) << r.describe() << r.output << r.sandbox_error;
  EXPECT_NE(r.output.find("null"), std::string::npos);
  for (const char* host_only : {"kmsg", "mem", "loop0", "sda", "vda", "nvme0n1", "kvm"})
    EXPECT_EQ(r.output.find(concat(host_only, "\n")), std::string::npos) << host_only << " is visible";
}

TEST(Sandbox, KeepsVisiblePathsInTheReplacedTemporaryFolder) {
  REQUIRE_NAMESPACES();
  WorkDir w("visible");
  WorkDir cache("cache");
  std::ofstream(cache.path / "candidate.so") << "library";
  std::ofstream(cache.path / "other.so") << "another candidate";
  SandboxOptions so = no_filter();
  so.visible = {cache.path / "candidate.so"};
  const ProcessResult r = sandboxed(w, concat("cat ", (cache.path / "candidate.so").string(), "; cat ",
                                              (cache.path / "other.so").string(), " 2>/dev/null || echo no-other"),
                                    so);
  ASSERT_TRUE(r.exited()) << r.describe() << r.output << r.sandbox_error;
  EXPECT_NE(r.output.find("library"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no-other"), std::string::npos) << r.output;
}

// A shared library is opened by the name its soname link has (libfoo.so.1 -> libfoo.so.1.2):
// the link stays readable by that name, not only its target.
TEST(Sandbox, KeepsAVisibleSymlinkReadableByItsName) {
  REQUIRE_NAMESPACES();
  WorkDir w("visible-link");
  WorkDir lib("lib");
  std::ofstream(lib.path / "libdep.so.1.2") << "dependency";
  fs::create_symlink("libdep.so.1.2", lib.path / "libdep.so.1");
  SandboxOptions so = no_filter();
  so.visible = {lib.path / "libdep.so.1"};
  const ProcessResult r = sandboxed(w, concat("cat ", (lib.path / "libdep.so.1").string()), so);
  ASSERT_TRUE(r.exited()) << r.describe() << r.output << r.sandbox_error;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("dependency"), std::string::npos) << r.output;
}

// The worker runs the harness's own executable: every shared object it loaded (those found
// through RUNPATH included) must stay visible, or the loader fails before main.
TEST(Sandbox, RunningCodePathsNameTheLoadedSharedObjects) {
  const std::vector<fs::path> paths = running_code_paths();
  const auto named = [&](const std::string& stem) {
    return std::any_of(paths.begin(), paths.end(),
                       [&](const fs::path& p) { return p.filename().string().rfind(stem, 0) == 0; });
  };
  EXPECT_TRUE(named("libc.so")) << "the C library is loaded in every process";
  EXPECT_TRUE(named("libstdc++.so")) << "the C++ runtime is loaded by every fk executable";
}

// A process that leaves the worker's session and writes a marker `delay` seconds after it
// started; the worker waits until it has started.
std::string survivor(const fs::path& dir, int delay = 1) {
  const std::string started = (dir / "started").string(), marker = (dir / "marker").string();
  return concat("setsid sh -c 'touch ", started, "; sleep ", delay, "; echo alive > ", marker,
                "' >/dev/null 2>&1 < /dev/null & while [ ! -e ", started, " ]; do sleep 0.05; done");
}

// Whether the marker appears within the given time.
bool marker_appears(const fs::path& dir, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (fs::exists(dir / "marker")) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return fs::exists(dir / "marker");
}

TEST(Sandbox, NoProcessSurvivesTheWorker) {
  REQUIRE_NAMESPACES();
  WorkDir w("survivor");
  const ProcessResult r = sandboxed(w, survivor(w.path));  // the filter would stop the fork
  ASSERT_TRUE(r.exited() && r.exit_code == 0) << r.describe() << r.output << r.sandbox_error;
  EXPECT_EQ(r.sandbox, "namespaces+seccomp (seccomp off)");
  EXPECT_TRUE(fs::exists(w.path / "started"));
  EXPECT_FALSE(marker_appears(w.path, 2.5)) << "a process outlived the sandboxed worker";

  // The same without the sandbox: the survivor escapes the process-group kill.
  WorkDir u("unsandboxed");
  const ProcessResult ru = run_process({"sh", "-c", survivor(u.path)});
  ASSERT_TRUE(ru.exited());
  EXPECT_TRUE(marker_appears(u.path, 20)) << "the check above could not fail";
}

TEST(Sandbox, NoProcessSurvivesATimeout) {
  REQUIRE_NAMESPACES();
  WorkDir w("timeout");
  const ProcessResult r = sandboxed(w, survivor(w.path, 3) + "; sleep 30", no_filter(), 1.5);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(marker_appears(w.path, 3)) << "a process outlived the timed-out worker";
}

TEST(Sandbox, FilterStopsAFork) {
  REQUIRE_NAMESPACES();
  if (!sandbox_support().seccomp) GTEST_SKIP() << "no seccomp filter on this host";
  WorkDir w("fork");
  const ProcessResult r = sandboxed(w, "sleep 0.1 & wait", SandboxOptions{});
  EXPECT_EQ(r.term_signal, SIGSYS) << r.describe() << r.output;
  EXPECT_EQ(r.sandbox, "namespaces+seccomp");
}

TEST(Sandbox, LimitsCpuTimeAndAddressSpace) {
  REQUIRE_NAMESPACES();
  WorkDir w("limits");
  SandboxOptions so = no_filter();
  so.memory_bytes = uint64_t{1} << 30;
  const ProcessResult r = sandboxed(w, "ulimit -v", so);
  ASSERT_TRUE(r.exited()) << r.describe() << r.output;
  EXPECT_NE(r.output.find("1048576"), std::string::npos) << r.output;  // KiB
  so.cpu_seconds = 1;
  const ProcessResult spin = sandboxed(w, "while :; do :; done", so);
  EXPECT_FALSE(spin.timed_out) << "the CPU limit did not stop it";
  EXPECT_TRUE(spin.term_signal == SIGXCPU || spin.term_signal == SIGKILL) << spin.describe();
}

// Runs a shell script in a sandbox planned for the given host support (as run_process does
// for the one this host gives): the fallbacks can be tested where namespaces work.
std::string run_planned(const SandboxSupport& support, const WorkDir& w, const std::string& script, int& status) {
  SandboxOptions so;
  so.work_dir = w.path;
  const SandboxPlan plan = plan_sandbox(so, support);
  int out[2], report[2];
  EXPECT_EQ(pipe(out), 0);
  EXPECT_EQ(pipe2(report, O_CLOEXEC), 0);
  const char* argv[] = {"/bin/sh", "-c", script.c_str(), nullptr};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(out[1], STDERR_FILENO);
    close(out[0]);
    close(out[1]);
    exec_in_sandbox(plan, report[1], const_cast<char* const*>(argv), environ);
  }
  close(out[1]);
  close(report[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
  close(out[0]);
  waitpid(pid, &status, 0);
  const SandboxReport rep = read_sandbox_report(report[0]);
  close(report[0]);
  EXPECT_EQ(rep.error, "");
  return text;
}

TEST(Sandbox, LandlockConfinesFilesWithoutNamespaces) {
  SandboxSupport landlock;
  landlock.landlock_abi = landlock_abi();
  if (landlock.landlock_abi == 0) GTEST_SKIP() << "this kernel has no Landlock";
  landlock.reason = "no namespaces (test)";
  EXPECT_EQ(landlock.describe().rfind("none: ", 0), 0u);  // without the filter it is no sandbox
  WorkDir w("landlock");
  const fs::path sibling = w.path.parent_path() / concat("fk-sandbox-test-ll-sibling-", getpid());
  std::ofstream(sibling) << "another worker's request";
  const fs::path outside = fs::current_path() / concat("fk-sandbox-test-ll-outside-", getpid());
  int status = 0;
  const std::string out = run_planned(
      landlock, w,
      concat("echo x > ", (w.path / "inside").string(), " && echo wrote-inside; cat ", sibling.string(),
             " 2>/dev/null && echo read-sibling; echo x > ", (w.path.parent_path() / "beside").string(),
             " 2>/dev/null && echo wrote-beside; echo x > ", outside.string(),
             " 2>/dev/null && echo wrote-outside; cat /etc/passwd > /dev/null && echo read-etc; echo x > /dev/null && "
             "echo dev-null; kill -0 ", getpid(), " 2>/dev/null && echo signalled-harness; ", kProcWrites),
      status);
  fs::remove(sibling);
  EXPECT_TRUE(WIFEXITED(status)) << out;
  EXPECT_NE(out.find("wrote-inside"), std::string::npos) << out;
  EXPECT_EQ(out.find("read-sibling"), std::string::npos) << out;
  EXPECT_EQ(out.find("wrote-beside"), std::string::npos) << out;
  EXPECT_EQ(out.find("wrote-outside"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(outside));
  EXPECT_NE(out.find("read-etc"), std::string::npos) << out;  // reads elsewhere stay allowed
  EXPECT_NE(out.find("dev-null"), std::string::npos) << out;
  if (landlock.landlock_abi >= 6) EXPECT_EQ(out.find("signalled-harness"), std::string::npos) << out;
  EXPECT_NE(out.find("named-thread"), std::string::npos) << out;
  EXPECT_EQ(out.find("wrote-sysctl"), std::string::npos) << out;
  std::error_code ec;
  fs::remove(outside, ec);
}

TEST(Sandbox, RefusesAWorkFolderOutsideATemporaryFolder) {
  REQUIRE_NAMESPACES();
  ProcessOptions po;
  po.sandbox = SandboxOptions{};
  po.sandbox->work_dir = "/";
  EXPECT_THROW(run_process({"true"}, po), Error);
}

}  // namespace
}  // namespace fk::bench
