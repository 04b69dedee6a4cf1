#include "harness/sandbox/sandbox.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <dirent.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "fk/status.h"
#include "harness/sandbox/seccomp_filter.h"

namespace fk::bench {

namespace fs = std::filesystem;

namespace {

// mount_setattr(2) (Linux 5.12), spelled out: the C library may predate it.
#ifndef SYS_mount_setattr
constexpr long kMountSetattr = 442;  // the same number on every architecture
#else
constexpr long kMountSetattr = SYS_mount_setattr;
#endif
constexpr unsigned kAtRecursive = 0x8000;
constexpr uint64_t kMountAttrRdonly = 0x1;
struct MountAttr {
  uint64_t attr_set, attr_clr, propagation, userns_fd;
};

// ---- child side: no allocation, no locks (the parent may have had other threads) ----

// One line to the report pipe: a kind letter, text pieces, and optionally an errno.
void report(int fd, char kind, const char* a, const char* b = "", int err = -1) {
  char buf[1024];
  size_t n = 0;
  auto put = [&](const char* s) {
    while (*s && n + 2 < sizeof(buf)) buf[n++] = *s++;
  };
  buf[n++] = kind;
  put(a);
  put(b);
  if (err >= 0) {
    char digits[16];
    int k = 0;
    do digits[k++] = static_cast<char>('0' + err % 10);
    while ((err /= 10) && k < 15);
    buf[n++] = '\t';
    while (k > 0 && n + 2 < sizeof(buf)) buf[n++] = digits[--k];
  }
  buf[n++] = '\n';
  (void)!write(fd, buf, n);
}

[[noreturn]] void fail(int fd, const char* what, const char* path = "") {
  report(fd, 'E', what, path, errno);
  _exit(125);
}

// "/proc/self/fd/<fd>": a bind-mount source that names an opened file, whatever covers
// its path by now.
void fd_path(char (&out)[40], int fd) {
  char digits[12];
  int k = 0;
  do digits[k++] = static_cast<char>('0' + fd % 10);
  while ((fd /= 10) && k < 11);
  const char* prefix = "/proc/self/fd/";
  size_t n = 0;
  while (*prefix) out[n++] = *prefix++;
  while (k > 0) out[n++] = digits[--k];
  out[n] = 0;
}

void write_file(int report_fd, const char* path, const char* text) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) fail(report_fd, "open ", path);
  if (write(fd, text, std::strlen(text)) < 0) fail(report_fd, "write ", path);
  close(fd);
}

void write_id_map(int report_fd, const char* path, unsigned id) {
  char text[32] = "0 ";
  char digits[12];
  int k = 0;
  do digits[k++] = static_cast<char>('0' + id % 10);
  while ((id /= 10) && k < 11);
  size_t n = 2;
  while (k > 0) text[n++] = digits[--k];
  text[n++] = ' ';
  text[n++] = '1';
  text[n] = 0;
  write_file(report_fd, path, text);
}

// An empty file or folder to bind a node onto.
void make_mount_point(int report_fd, const SandboxPlan::Node& node) {
  for (const std::string& p : node.parents)
    if (mkdir(p.c_str(), 0755) != 0 && errno != EEXIST) fail(report_fd, "mkdir ", p.c_str());
  if (node.is_dir) {
    if (mkdir(node.path.c_str(), 0755) != 0 && errno != EEXIST) fail(report_fd, "mkdir ", node.path.c_str());
    return;
  }
  const int f = open(node.path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (f < 0) fail(report_fd, "create ", node.path.c_str());
  close(f);
}

// Opens every node to bind before the folder that holds it is covered.
void open_nodes(int report_fd, const std::vector<SandboxPlan::Node>& nodes, int* fds) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    fds[i] = -1;
    if (!nodes[i].link_target.empty()) continue;
    fds[i] = open(nodes[i].path.c_str(), O_PATH | O_CLOEXEC | O_NOFOLLOW);
    if (fds[i] < 0) fail(report_fd, "open ", nodes[i].path.c_str());
  }
}

void bind_nodes(int report_fd, const std::vector<SandboxPlan::Node>& nodes, const int* fds) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    const SandboxPlan::Node& node = nodes[i];
    if (!node.link_target.empty()) {
      for (const std::string& p : node.parents)
        if (mkdir(p.c_str(), 0755) != 0 && errno != EEXIST) fail(report_fd, "mkdir ", p.c_str());
      if (symlink(node.link_target.c_str(), node.path.c_str()) != 0 && errno != EEXIST)
        fail(report_fd, "symlink ", node.path.c_str());
      continue;
    }
    make_mount_point(report_fd, node);
    char src[40];
    fd_path(src, fds[i]);
    if (mount(src, node.path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
      fail(report_fd, "bind mount ", node.path.c_str());
    close(fds[i]);
  }
}

void set_read_only(int report_fd, const char* path, bool recursive, bool read_only) {
  MountAttr attr{};
  (read_only ? attr.attr_set : attr.attr_clr) = kMountAttrRdonly;
  if (syscall(kMountSetattr, AT_FDCWD, path, recursive ? kAtRecursive : 0u, &attr, sizeof(attr)) != 0)
    fail(report_fd, "mount_setattr (Linux 5.12 or newer) ", path);
}

// The mount namespace's contents (sandbox.h). Runs in the new mount namespace, before the
// PID namespace's init exists (it mounts /proc).
void setup_mounts(const SandboxPlan& plan, int report_fd) {
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) fail(report_fd, "make / private");
  const int work_fd = open(plan.work_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (work_fd < 0) fail(report_fd, "open ", plan.work_dir.c_str());
  int dev_fds[256], visible_fds[64];
  if (plan.devices.size() > 256 || plan.visible.size() > 64) {
    errno = E2BIG;
    fail(report_fd, "too many device nodes or visible paths");
  }
  open_nodes(report_fd, plan.devices, dev_fds);
  open_nodes(report_fd, plan.visible, visible_fds);

  if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=1m") != 0) fail(report_fd, "mount /dev");
  bind_nodes(report_fd, plan.devices, dev_fds);
  if (mkdir("/dev/shm", 01777) != 0 && errno != EEXIST) fail(report_fd, "mkdir /dev/shm");
  if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0) fail(report_fd, "mount /dev/shm");

  const char* temp = plan.temp_root.c_str();
  if (mount("tmpfs", temp, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0) fail(report_fd, "mount ", temp);
  if (mkdir(plan.work_dir.c_str(), 0700) != 0 && errno != EEXIST) fail(report_fd, "mkdir ", plan.work_dir.c_str());
  char src[40];
  fd_path(src, work_fd);
  if (mount(src, plan.work_dir.c_str(), nullptr, MS_BIND, nullptr) != 0)
    fail(report_fd, "bind mount ", plan.work_dir.c_str());
  close(work_fd);
  bind_nodes(report_fd, plan.visible, visible_fds);

  // Everything read-only (the private temporary folder too: it shows the worker's folder
  // and nothing else), then the worker's folder and /dev/shm writable again.
  set_read_only(report_fd, "/", true, true);
  set_read_only(report_fd, "/dev/shm", false, false);
  set_read_only(report_fd, plan.work_dir.c_str(), false, false);
}

// The namespace's own /proc. Its process folders stay writable: the CUDA driver names its
// threads through /proc/self/task/<tid>/comm and fails to start (CUDA_ERROR_OPERATING_SYSTEM)
// where it cannot. Everything else in it (sysctls, /proc/sysrq-trigger, IRQ affinities, ...)
// is bound read-only over itself: a worker's uid may be root, without capabilities, and
// root owns those files. Runs in the namespace's init, after fork: no allocation.
struct LinuxDirent64 {  // getdents64's record (linux/dirent.h's linux_dirent64)
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

void mount_namespace_proc(int report_fd) {
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    report(report_fd, 'N', "the host's /proc stays visible: mount proc failed", "", errno);
    return;
  }
  const int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) fail(report_fd, "open /proc");
  alignas(8) char buf[4096];
  char path[300];
  for (;;) {
    const long n = syscall(SYS_getdents64, dir, buf, sizeof(buf));
    if (n < 0) fail(report_fd, "read /proc");
    if (n == 0) break;
    for (long at = 0; at < n;) {
      const auto* e = reinterpret_cast<const LinuxDirent64*>(buf + at);
      at += e->d_reclen;
      const char* name = e->d_name;
      const bool process = name[0] >= '0' && name[0] <= '9';
      if (process || !std::strcmp(name, ".") || !std::strcmp(name, "..") || !std::strcmp(name, "self") ||
          !std::strcmp(name, "thread-self") || e->d_type == DT_LNK || std::strlen(name) > 250)
        continue;
      std::strcpy(path, "/proc/");
      std::strcat(path, name);
      if (mount(path, path, nullptr, MS_BIND | MS_REC, nullptr) != 0) fail(report_fd, "bind mount ", path);
      set_read_only(report_fd, path, true, true);
    }
  }
  close(dir);
}

// The worker itself: limits, no capabilities, the filter, exec.
[[noreturn]] void limit_and_exec(const SandboxPlan& plan, int report_fd, char* const argv[], char* const envp[]) {
  if (plan.cpu_seconds > 0) {
    const rlimit cpu{plan.cpu_seconds, plan.cpu_seconds + 5};  // SIGXCPU first, then SIGKILL
    if (setrlimit(RLIMIT_CPU, &cpu) != 0) fail(report_fd, "setrlimit RLIMIT_CPU");
  }
  if (plan.memory_bytes > 0) {
    const rlimit as{plan.memory_bytes, plan.memory_bytes};
    if (setrlimit(RLIMIT_AS, &as) != 0) fail(report_fd, "setrlimit RLIMIT_AS");
  }
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  // Root of the namespace (or of the host) keeps no capability: it could unmount the
  // private folders and see what they cover, or override file permissions.
  for (int c = 0; c <= plan.cap_last; ++c) prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capset, &hdr, data) != 0) fail(report_fd, "drop capabilities");
  if (plan.landlock_abi > 0) {
    const int err = apply_landlock(plan.landlock_rules, plan.landlock_abi);
    if (err != 0) {
      errno = err;
      fail(report_fd, "apply the Landlock ruleset");
    }
  }
  if (plan.seccomp) {
    const int err = install_seccomp_filter();
    if (err != 0) {
      errno = err;
      fail(report_fd, "install the seccomp filter");
    }
  }
  if (!argv) _exit(0);  // the probe: the sandbox is up, nothing to run
  execvpe(argv[0], argv, envp);
  fail(report_fd, "exec ", argv[0]);
}

}  // namespace

[[noreturn]] void exec_in_sandbox(const SandboxPlan& plan, int report_fd, char* const argv[], char* const envp[]) {
  if (!plan.namespaces) limit_and_exec(plan, report_fd, argv, envp);
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (plan.user_namespace) {
    if (unshare(CLONE_NEWUSER) != 0) fail(report_fd, "unshare(CLONE_NEWUSER)");
    write_id_map(report_fd, "/proc/self/uid_map", plan.uid);
    write_file(report_fd, "/proc/self/setgroups", "deny");
    write_id_map(report_fd, "/proc/self/gid_map", plan.gid);
  }
  if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC) != 0)
    fail(report_fd, "unshare(mount, pid, network, ipc namespaces)");
  setup_mounts(plan, report_fd);
  const pid_t init = fork();
  if (init < 0) fail(report_fd, "fork the namespace's init");
  if (init == 0) {
    // PID 1 of the namespace. Its exit makes the kernel kill whatever else is in it.
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    // Nothing the worker could write reaches init's memory or files (/proc/1/mem).
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    mount_namespace_proc(report_fd);
    const pid_t worker = fork();
    if (worker < 0) fail(report_fd, "fork the worker");
    if (worker == 0) limit_and_exec(plan, report_fd, argv, envp);
    for (;;) {
      int status = 0;
      const pid_t r = waitpid(-1, &status, 0);
      if (r == worker) {
        char line[24] = "S";
        unsigned u = static_cast<unsigned>(status);
        char digits[12];
        int k = 0;
        do digits[k++] = static_cast<char>('0' + u % 10);
        while ((u /= 10) && k < 11);
        size_t n = 1;
        while (k > 0) line[n++] = digits[--k];
        line[n++] = '\n';
        (void)!write(report_fd, line, n);
        _exit(0);
      }
      if (r < 0 && errno != EINTR) _exit(124);
    }
  }
  int status = 0;
  while (waitpid(init, &status, 0) < 0 && errno == EINTR) {
  }
  _exit(0);
}

SandboxReport read_sandbox_report(int fd) {
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
  SandboxReport r;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    std::string body = line.substr(1);
    const size_t tab = body.find('\t');
    if (tab != std::string::npos) body = body.substr(0, tab) + ": " + std::strerror(std::atoi(body.c_str() + tab + 1));
    if (line[0] == 'S') {
      r.has_status = true;
      r.status = static_cast<int>(std::strtoul(body.c_str(), nullptr, 10));
    } else if (line[0] == 'E') {
      r.error = body;
    } else if (line[0] == 'N') {
      r.note = body;
    }
  }
  return r;
}

std::string SandboxSupport::describe() const {
  if (namespaces && seccomp) return "namespaces+seccomp";
  if (landlock_abi > 0 && seccomp) return "landlock+seccomp: " + reason;
  if (seccomp) return "seccomp only: " + reason;
  return "none: " + reason;
}

namespace {

int cap_last_cap() {
  std::ifstream in("/proc/sys/kernel/cap_last_cap");
  int v = 63;
  in >> v;
  return in ? v : 63;
}

// /dev in the sandbox: the basic nodes, the standard links, the NVIDIA devices.
std::vector<SandboxPlan::Node> device_nodes() {
  std::vector<SandboxPlan::Node> out;
  for (const char* name : {"null", "zero", "full", "random", "urandom", "tty"})
    if (fs::exists(fs::path("/dev") / name)) out.push_back({concat("/dev/", name), "", false, {}});
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("nvidia", 0) != 0) continue;
    SandboxPlan::Node n{e.path().string(), "", false, {}};
    if (e.is_symlink(ec)) n.link_target = fs::read_symlink(e.path(), ec).string();
    else n.is_dir = e.is_directory(ec);
    out.push_back(n);
  }
  out.push_back({"/dev/fd", "/proc/self/fd", false, {}});
  out.push_back({"/dev/stdin", "/proc/self/fd/0", false, {}});
  out.push_back({"/dev/stdout", "/proc/self/fd/1", false, {}});
  out.push_back({"/dev/stderr", "/proc/self/fd/2", false, {}});
  return out;
}

bool inside(const fs::path& p, const fs::path& dir) {
  auto [d, pi] = std::mismatch(dir.begin(), dir.end(), p.begin(), p.end());
  return d == dir.end();
}

}  // namespace

SandboxPlan plan_sandbox(const SandboxOptions& opts, const SandboxSupport& support) {
  SandboxPlan plan;
  plan.namespaces = support.namespaces;
  plan.user_namespace = support.user_namespace;
  plan.seccomp = support.seccomp && opts.seccomp;
  plan.description = support.describe();
  if (!opts.seccomp && support.seccomp) plan.description += " (seccomp off)";
  plan.uid = geteuid();
  plan.gid = getegid();
  plan.cpu_seconds = opts.cpu_seconds > 0 ? static_cast<uint64_t>(opts.cpu_seconds + 0.999) : 0;
  plan.memory_bytes = opts.memory_bytes;
  plan.cap_last = cap_last_cap();
  if (!plan.namespaces && support.landlock_abi == 0) return plan;
  FK_CHECK(!opts.work_dir.empty(), "sandbox: no work folder given");
  const fs::path work = fs::weakly_canonical(opts.work_dir);
  FK_CHECK(fs::is_directory(work), "sandbox: the work folder ", work.string(), " does not exist");
  const fs::path temp = work.parent_path();
  FK_CHECK(temp != work.root_path() && !temp.empty(), "sandbox: the work folder ", work.string(),
           " must lie in a temporary folder (not in /), which the sandbox replaces by a private one");
  plan.work_dir = work.string();
  plan.temp_root = temp.string();
  plan.devices = device_nodes();
  if (!plan.namespaces) {
    plan.landlock_abi = support.landlock_abi;
    std::vector<std::string> devices;
    for (const SandboxPlan::Node& n : plan.devices)
      if (n.link_target.empty()) devices.push_back(n.path);
    plan.landlock_rules = landlock_rules(work, temp, opts.visible, devices);
    plan.devices.clear();
    return plan;
  }
  // Once each: a path named twice (the executable, and the library it runs from when that
  // is the executable itself) would be bound over itself, which fails.
  const auto add_node = [&](const fs::path& p, std::string link_target) {
    const auto named_before = [&](const SandboxPlan::Node& m) { return m.path == p.string(); };
    if (std::any_of(plan.visible.begin(), plan.visible.end(), named_before)) return;
    SandboxPlan::Node n{p.string(), std::move(link_target), false, {}};
    n.is_dir = n.link_target.empty() && fs::is_directory(p);
    fs::path parent = temp;
    const fs::path rel = p.parent_path().lexically_relative(temp);
    for (const fs::path& part : rel)
      if (part != ".") n.parents.push_back((parent /= part).string());
    plan.visible.push_back(n);
  };
  for (const fs::path& v : opts.visible) {
    std::error_code ec;
    const fs::path p = fs::weakly_canonical(v, ec);
    if (ec || !fs::exists(p) || !inside(p, temp) || inside(p, work)) continue;  // visible anyway, or gone
    // A symlink the loader opens by name (libfoo.so.1 -> libfoo.so.1.2) is recreated beside
    // its target, which is bound.
    const fs::path named = fs::weakly_canonical(v.parent_path(), ec) / v.filename();
    if (!ec && named != p && fs::is_symlink(named) && inside(named, temp) && !inside(named, work))
      add_node(named, fs::read_symlink(named, ec).string());
    add_node(p, "");
  }
  return plan;
}

namespace {

// Sets up a sandbox around a child that only exits, as run_process would: whatever fails
// is the reason this host gives less.
std::string try_sandbox(const SandboxSupport& s) {
  const fs::path dir = fs::temp_directory_path() / concat("fk-sandbox-probe-", getpid());
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return concat("cannot create ", dir.string(), ": ", ec.message());
  SandboxPlan plan;
  try {
    SandboxOptions o;
    o.work_dir = dir;
    plan = plan_sandbox(o, s);
  } catch (const std::exception& e) {
    fs::remove_all(dir, ec);
    return e.what();
  }
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return concat("pipe: ", std::strerror(errno));
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    const int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, STDOUT_FILENO);
      dup2(devnull, STDERR_FILENO);
    }
    exec_in_sandbox(plan, pipefd[1], nullptr, nullptr);
  }
  close(pipefd[1]);
  int status = 0;
  if (pid > 0)
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  const SandboxReport r = read_sandbox_report(pipefd[0]);
  close(pipefd[0]);
  fs::remove_all(dir, ec);
  if (pid < 0) return concat("fork: ", std::strerror(errno));
  if (!r.error.empty()) return r.error;
  if (WIFSIGNALED(status)) return concat("the probe was killed by signal ", WTERMSIG(status));
  if (s.namespaces && !r.has_status) return "the namespace's init did not report";
  if (r.has_status && r.status != 0) return concat("the probe's worker ended with status ", r.status);
  return "";
}

SandboxSupport probe() {
  SandboxSupport s;
  const std::string mode = std::getenv("FK_SANDBOX") ? std::getenv("FK_SANDBOX") : "";
  if (mode == "off") {
    s.reason = "disabled by FK_SANDBOX=off";
    return s;
  }
  s.seccomp = true;
  std::string why_not = mode == "no-namespaces" ? "disabled by FK_SANDBOX=no-namespaces" : "";
  // As root, namespaces without a user namespace; otherwise (or if that fails: a container
  // without CAP_SYS_ADMIN) through one.
  for (const bool user_ns : {false, true}) {
    if (mode == "no-namespaces" || (!user_ns && geteuid() != 0)) continue;
    s.namespaces = true;
    s.user_namespace = user_ns;
    const std::string err = try_sandbox(s);
    if (err.empty()) return s;
    why_not += concat(why_not.empty() ? "" : "; ", user_ns ? "with a user namespace: " : "as root: ", err);
  }
  s.namespaces = s.user_namespace = false;
  s.reason = "no namespaces (" + why_not + ")";
  if ((s.landlock_abi = landlock_abi()) > 0) {
    if (const std::string err = try_sandbox(s); err.empty()) return s;
    else s.reason += "; no Landlock (" + err + ")";
    s.landlock_abi = 0;
  } else {
    s.reason += "; no Landlock in this kernel";
  }
  if (const std::string err = try_sandbox(s); !err.empty()) {
    s.seccomp = false;
    s.reason += "; no seccomp filter (" + err + ")";
  }
  return s;
}

}  // namespace

SandboxSupport nested_sandbox_support() {
  SandboxSupport s;
  const char* mode = std::getenv("FK_SANDBOX");
  if (mode != nullptr && std::string(mode) == "off") {
    s.reason = "disabled by FK_SANDBOX=off";
    return s;
  }
  s.seccomp = true;
  s.landlock_abi = landlock_abi();
  s.reason = "inside the worker's sandbox";
  return s;
}

const SandboxSupport& sandbox_support() {
  static const SandboxSupport s = probe();
  return s;
}

}  // namespace fk::bench
