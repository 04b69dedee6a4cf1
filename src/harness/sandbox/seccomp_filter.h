// The system-call filter of a sandboxed worker or runner (seccomp-BPF, built here from the
// kernel's own headers): the process that loads a candidate (the worker on the CUDA
// backend, the candidate's runner on the CPU) has it on every thread: what it forbids, no
// candidate code can do.
//
// Forbidden, and reported (SIGSYS; the worker's reporter turns it into a REWARD_HACK):
//   ptrace, process_vm_readv/writev, pidfd_getfd, kcmp  -- reading or steering another process
//   fork, vfork, clone without CLONE_THREAD           -- a process of its own (threads stay allowed)
//   socket of any family but AF_UNIX and AF_NETLINK   -- talking to the network
//   mount, umount2, pivot_root, chroot, unshare, setns, bpf, io_uring_setup, userfaultfd,
//   (f)init_module, delete_module, kexec_(file_)load  -- leaving or reshaping the sandbox
// clone3 answers ENOSYS: its flags live in memory a filter cannot read, and the C library
// then creates threads with clone, whose flags the filter checks.
#pragma once

namespace fk::bench {

// Exit status of a worker whose violation reporter caught a forbidden call.
inline constexpr int kSandboxViolationExit = 86;

// Installs the filter on the calling thread and the threads it creates later (call it
// before any other thread exists, or with exec following). Sets no_new_privs. Returns 0,
// or the errno of the failing prctl. Async-signal-safe: callable between fork and exec.
int install_seccomp_filter();

// The name of a system call the filter forbids ("ptrace", "clone (a new process)"), or
// nullptr for any other number. Async-signal-safe.
const char* forbidden_syscall_name(long nr);

// In the worker, before any candidate code is loaded: a SIGSYS handler that writes the
// forbidden call's name and, on a second line, who made it ("harness" until
// mark_candidate_loaded(), then "candidate") into violation_file and exits with
// kSandboxViolationExit; then a second filter that kills the process outright if anyone
// replaces that handler. Returns 0 or an errno.
int install_violation_reporter(const char* violation_file);
// From here on a forbidden call is the candidate's (called just before it is loaded: its
// static constructors run at load). Until then it was the harness's own, or the driver's:
// a sandbox that does not fit the host, not a cheat.
void mark_candidate_loaded();

}  // namespace fk::bench
