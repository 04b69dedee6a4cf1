#include "harness/sandbox/seccomp_filter.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "fk/status.h"

namespace fk::bench {
namespace {

constexpr int kNoFilter = 99;  // the child could not install the filter: the host has no seccomp

// Runs body in a forked child under the filter (plus the violation reporter when given a
// file); returns the child's wait status. A body that returns exits 0.
int under_filter(const std::function<void()>& body, const std::string& violation_file = "") {
  const pid_t pid = fork();
  if (pid == 0) {
    if (install_seccomp_filter() != 0) _exit(kNoFilter);
    if (!violation_file.empty() && install_violation_reporter(violation_file.c_str()) != 0) _exit(kNoFilter);
    body();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

bool killed_by_sigsys(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS; }

#define SKIP_WITHOUT_SECCOMP(status)                                                                    \
  if (WIFEXITED(status) && WEXITSTATUS(status) == kNoFilter) GTEST_SKIP() << "this host cannot install a " \
                                                                             "seccomp filter";

TEST(SeccompFilter, AllowsOrdinaryWork) {
  const int s = under_filter([] {
    std::thread t([] {});  // threads: clone with CLONE_THREAD (clone3 answers ENOSYS first)
    t.join();
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);  // a local socket
    if (fd < 0) _exit(2);
    close(fd);
    if (getpid() <= 0) _exit(3);
  });
  SKIP_WITHOUT_SECCOMP(s);
  ASSERT_TRUE(WIFEXITED(s)) << "signal " << (WIFSIGNALED(s) ? WTERMSIG(s) : 0);
  EXPECT_EQ(WEXITSTATUS(s), 0);
}

TEST(SeccompFilter, KillsPtrace) {
  const int s = under_filter([] { ptrace(PTRACE_TRACEME, 0, nullptr, nullptr); });
  SKIP_WITHOUT_SECCOMP(s);
  EXPECT_TRUE(killed_by_sigsys(s)) << "status " << s;
}

TEST(SeccompFilter, KillsProcessVmReadvOfTheParent) {
  const int s = under_filter([] {
    char buf[64], *addr = buf;
    iovec local{buf, sizeof(buf)}, remote{addr, sizeof(buf)};
    process_vm_readv(getppid(), &local, 1, &remote, 1, 0);
  });
  SKIP_WITHOUT_SECCOMP(s);
  EXPECT_TRUE(killed_by_sigsys(s)) << "status " << s;
}

TEST(SeccompFilter, KillsFork) {
  const int s = under_filter([] {
    if (fork() == 0) _exit(0);  // reaching here means the fork went through
  });
  SKIP_WITHOUT_SECCOMP(s);
  EXPECT_TRUE(killed_by_sigsys(s)) << "status " << s;
}

TEST(SeccompFilter, KillsANetworkSocket) {
  const int s = under_filter([] { socket(AF_INET, SOCK_DGRAM, 0); });
  SKIP_WITHOUT_SECCOMP(s);
  EXPECT_TRUE(killed_by_sigsys(s)) << "status " << s;
  const int s6 = under_filter([] { socket(AF_INET6, SOCK_STREAM, 0); });
  EXPECT_TRUE(killed_by_sigsys(s6)) << "status " << s6;
}

TEST(SeccompFilter, KillsUnshare) {
  const int s = under_filter([] { syscall(SYS_unshare, 0x10000000 /* CLONE_NEWUSER */); });
  SKIP_WITHOUT_SECCOMP(s);
  EXPECT_TRUE(killed_by_sigsys(s)) << "status " << s;
}

TEST(SeccompFilter, ReporterNamesTheCallAndExits) {
  const auto file = std::filesystem::temp_directory_path() / concat("fk-seccomp-test-", getpid());
  const int s = under_filter([] { ptrace(PTRACE_TRACEME, 0, nullptr, nullptr); }, file.string());
  SKIP_WITHOUT_SECCOMP(s);
  ASSERT_TRUE(WIFEXITED(s)) << "status " << s;
  EXPECT_EQ(WEXITSTATUS(s), kSandboxViolationExit);
  std::ifstream in(file);
  std::string name, who;
  std::getline(in, name);
  std::getline(in, who);
  EXPECT_EQ(name, "ptrace");
  EXPECT_EQ(who, "harness");  // no candidate loaded yet
  std::filesystem::remove(file);
}

TEST(SeccompFilter, ReporterBlamesTheCandidateOnceLoaded) {
  const auto file = std::filesystem::temp_directory_path() / concat("fk-seccomp-test-c-", getpid());
  const int s = under_filter(
      [] {
        mark_candidate_loaded();
        socket(AF_INET6, SOCK_DGRAM, 0);
      },
      file.string());
  SKIP_WITHOUT_SECCOMP(s);
  ASSERT_TRUE(WIFEXITED(s)) << "status " << s;
  EXPECT_EQ(WEXITSTATUS(s), kSandboxViolationExit);
  std::ifstream in(file);
  std::string name, who;
  std::getline(in, name);
  std::getline(in, who);
  EXPECT_EQ(name, "socket (a network socket)");
  EXPECT_EQ(who, "candidate");
  std::filesystem::remove(file);
}

TEST(SeccompFilter, ReporterCannotBeReplaced) {
  const auto file = std::filesystem::temp_directory_path() / concat("fk-seccomp-test-r-", getpid());
  const int s = under_filter(
      [] {
        signal(SIGSYS, SIG_IGN);  // a candidate hiding its forbidden calls
        _exit(5);
      },
      file.string());
  SKIP_WITHOUT_SECCOMP(s);
  EXPECT_TRUE(killed_by_sigsys(s)) << "status " << s;
  std::filesystem::remove(file);
}

TEST(SeccompFilter, NamesTheForbiddenCalls) {
  EXPECT_STREQ(forbidden_syscall_name(SYS_ptrace), "ptrace");
  EXPECT_STREQ(forbidden_syscall_name(SYS_process_vm_readv), "process_vm_readv");
  EXPECT_STREQ(forbidden_syscall_name(SYS_clone), "clone (a new process)");
  EXPECT_EQ(forbidden_syscall_name(SYS_read), nullptr);
  EXPECT_EQ(forbidden_syscall_name(SYS_ioctl), nullptr);  // the CUDA driver's way in
}

}  // namespace
}  // namespace fk::bench
