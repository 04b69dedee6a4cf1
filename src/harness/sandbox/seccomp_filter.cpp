#include "harness/sandbox/seccomp_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace fk::bench {

namespace {

#if defined(__x86_64__)
constexpr unsigned kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kArch = AUDIT_ARCH_AARCH64;
#else
#error "the sandbox's seccomp filter knows x86_64 and aarch64 only"
#endif

// What a rule does with a matching call.
enum class Check { always, unless_thread, unless_local_socket };

struct Rule {
  long nr;
  const char* name;
  Check check;
};

// The forbidden calls (seccomp_filter.h says why each). fork and vfork exist on x86_64 only.
constexpr Rule kRules[] = {
    {SYS_ptrace, "ptrace", Check::always},
    {SYS_process_vm_readv, "process_vm_readv", Check::always},
    {SYS_process_vm_writev, "process_vm_writev", Check::always},
#ifdef SYS_pidfd_getfd
    {SYS_pidfd_getfd, "pidfd_getfd", Check::always},
#endif
    {SYS_kcmp, "kcmp", Check::always},
#ifdef SYS_fork
    {SYS_fork, "fork", Check::always},
#endif
#ifdef SYS_vfork
    {SYS_vfork, "vfork", Check::always},
#endif
    {SYS_clone, "clone (a new process)", Check::unless_thread},
    {SYS_socket, "socket (a network socket)", Check::unless_local_socket},
    {SYS_mount, "mount", Check::always},
    {SYS_umount2, "umount2", Check::always},
    {SYS_pivot_root, "pivot_root", Check::always},
    {SYS_chroot, "chroot", Check::always},
    {SYS_unshare, "unshare", Check::always},
    {SYS_setns, "setns", Check::always},
    {SYS_bpf, "bpf", Check::always},
#ifdef SYS_io_uring_setup
    {SYS_io_uring_setup, "io_uring_setup", Check::always},
#endif
    {SYS_userfaultfd, "userfaultfd", Check::always},
    {SYS_init_module, "init_module", Check::always},
    {SYS_finit_module, "finit_module", Check::always},
    {SYS_delete_module, "delete_module", Check::always},
    {SYS_kexec_load, "kexec_load", Check::always},
#ifdef SYS_kexec_file_load
    {SYS_kexec_file_load, "kexec_file_load", Check::always},
#endif
};

#ifndef SYS_clone3
constexpr long kClone3 = 435;  // the same number on every architecture
#else
constexpr long kClone3 = SYS_clone3;
#endif

constexpr unsigned kArg0Low = offsetof(seccomp_data, args[0]);
constexpr unsigned kArg1Low = offsetof(seccomp_data, args[1]);
constexpr unsigned kArg1High = offsetof(seccomp_data, args[1]) + 4;  // little endian: the high half follows

// A fixed-size program builder (no allocation: it may run between fork and exec).
struct Program {
  sock_filter code[160];
  unsigned n = 0;
  bool overflow = false;
  void add(sock_filter f) {
    if (n < sizeof(code) / sizeof(code[0])) code[n++] = f;
    else overflow = true;
  }
  void stmt(unsigned short op, unsigned k) { add(BPF_STMT(op, k)); }
  void jump(unsigned short op, unsigned k, unsigned char jt, unsigned char jf) { add(BPF_JUMP(op, k, jt, jf)); }
  void load_nr() { stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)); }
  // Anything built for another architecture (or x86_64's x32 numbers) is killed: the
  // numbers below mean nothing there.
  void check_arch() {
    stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch));
    jump(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0);
    stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    load_nr();
#if defined(__x86_64__)
    jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
    stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
#endif
  }
  int install() const {
    if (overflow) return E2BIG;
    sock_fprog prog{static_cast<unsigned short>(n), const_cast<sock_filter*>(code)};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) return errno;
    return 0;
  }
};

void build_filter(Program& p) {
  p.check_arch();
  // clone3 -> ENOSYS (the C library falls back to clone).
  p.jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(kClone3), 0, 1);
  p.stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
  for (const Rule& r : kRules) {
    switch (r.check) {
      case Check::always:
        p.jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(r.nr), 0, 1);
        p.stmt(BPF_RET | BPF_K, SECCOMP_RET_TRAP);
        break;
      case Check::unless_thread:  // a thread (CLONE_THREAD) is allowed, a process trapped
        p.jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(r.nr), 0, 4);
        p.stmt(BPF_LD | BPF_W | BPF_ABS, kArg0Low);
        p.jump(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1);
        p.stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        p.stmt(BPF_RET | BPF_K, SECCOMP_RET_TRAP);
        break;
      case Check::unless_local_socket:
        p.jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(r.nr), 0, 5);
        p.stmt(BPF_LD | BPF_W | BPF_ABS, kArg0Low);
        p.jump(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 2, 0);
        p.jump(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 1, 0);
        p.stmt(BPF_RET | BPF_K, SECCOMP_RET_TRAP);
        p.stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        break;
    }
  }
  p.stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
}

// The violation reporter's state: set once before the handler is installed.
char g_violation_file[4096];
volatile sig_atomic_t g_candidate_loaded = 0;

size_t append(char* buf, size_t at, size_t cap, const char* s) {
  while (*s && at + 1 < cap) buf[at++] = *s++;
  buf[at] = 0;
  return at;
}

size_t append_number(char* buf, size_t at, size_t cap, long v) {
  char digits[24];
  int k = 0;
  unsigned long u = v < 0 ? static_cast<unsigned long>(-v) : static_cast<unsigned long>(v);
  do digits[k++] = static_cast<char>('0' + u % 10);
  while ((u /= 10) && k < 23);
  if (v < 0) at = append(buf, at, cap, "-");
  while (k > 0 && at + 1 < cap) buf[at++] = digits[--k];
  buf[at] = 0;
  return at;
}

void on_sigsys(int, siginfo_t* info, void*) {
  char msg[128];
  const char* name = forbidden_syscall_name(info->si_syscall);
  size_t n = 0;
  if (name) {
    n = append(msg, 0, sizeof(msg), name);
  } else {
    n = append(msg, 0, sizeof(msg), "system call ");
    n = append_number(msg, n, sizeof(msg), info->si_syscall);
  }
  n = append(msg, n, sizeof(msg), g_candidate_loaded ? "\ncandidate\n" : "\nharness\n");
  const int fd = open(g_violation_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    (void)!write(fd, msg, n);
    close(fd);
  }
  _exit(kSandboxViolationExit);
}

}  // namespace

const char* forbidden_syscall_name(long nr) {
  for (const Rule& r : kRules)
    if (r.nr == nr) return r.name;
  return nullptr;
}

int install_seccomp_filter() {
  Program p;
  build_filter(p);
  return p.install();
}

void mark_candidate_loaded() { g_candidate_loaded = 1; }

int install_violation_reporter(const char* violation_file) {
  if (std::strlen(violation_file) >= sizeof(g_violation_file)) return ENAMETOOLONG;
  std::strcpy(g_violation_file, violation_file);
  struct sigaction sa {};
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSYS, &sa, nullptr) != 0) return errno;
  // rt_sigaction(SIGSYS, act != NULL, ...) -> kill: the handler above stays the one.
  Program p;
  p.check_arch();
  p.jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_rt_sigaction, 0, 7);
  p.stmt(BPF_LD | BPF_W | BPF_ABS, kArg0Low);
  p.jump(BPF_JMP | BPF_JEQ | BPF_K, SIGSYS, 0, 5);
  p.stmt(BPF_LD | BPF_W | BPF_ABS, kArg1Low);
  p.jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2);  // a new action given (low half)...
  p.stmt(BPF_LD | BPF_W | BPF_ABS, kArg1High);
  p.jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0);  // ...or high half
  p.stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  p.stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  return p.install();
}

}  // namespace fk::bench
