#include "harness/sandbox/subprocess.h"

#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "fk/status.h"

extern char** environ;

namespace fk::bench {

std::string ProcessResult::describe() const {
  if (timed_out) return concat("timed out after ", seconds, " s");
  if (stopped) return "stopped by the harness";
  if (term_signal) return concat("killed by signal ", term_signal, " (", strsignal(term_signal), ")");
  return concat("exit ", exit_code);
}

std::string self_executable() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  FK_CHECK(n > 0, "cannot read /proc/self/exe");
  buf[n] = 0;
  return buf;
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& opts) {
  FK_CHECK(!argv.empty(), "run_process: empty command");
  // The sandbox is planned here: between fork and exec the child only makes system calls.
  std::optional<SandboxPlan> plan;
  if (opts.sandbox)
    plan = plan_sandbox(*opts.sandbox, opts.sandbox->nested ? nested_sandbox_support() : sandbox_support());
  int pipefd[2];
  FK_CHECK(pipe2(pipefd, O_CLOEXEC) == 0, "pipe: ", strerror(errno));
  int report[2] = {-1, -1};  // the sandbox's report (sandbox.h)
  if (plan && pipe2(report, O_CLOEXEC) != 0) {
    close(pipefd[0]);
    close(pipefd[1]);
    FK_FAIL(FK_ERR_INTERNAL, "pipe: ", strerror(errno));
  }

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_store;
  const auto kept = [&](const std::string& e) {
    if (opts.keep_env.empty()) return true;
    const std::string name = e.substr(0, e.find('='));
    for (const std::string& k : opts.keep_env)
      if (k.ends_with('*') ? name.rfind(k.substr(0, k.size() - 1), 0) == 0 : name == k) return true;
    return false;
  };
  for (char** e = environ; *e; ++e)
    if (kept(*e)) env_store.emplace_back(*e);
  for (const auto& e : opts.extra_env) env_store.push_back(e);
  // In the sandbox the worker's folder is the only writable one: temporary files go there.
  if (plan && !plan->work_dir.empty()) {
    std::erase_if(env_store, [](const std::string& e) { return e.rfind("TMPDIR=", 0) == 0; });
    env_store.push_back("TMPDIR=" + plan->work_dir);
  }
  std::vector<char*> envp;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);

  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  FK_CHECK(pid >= 0, "fork: ", strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    dup2(pipefd[1], STDOUT_FILENO);
    dup2(pipefd[1], STDERR_FILENO);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    if (!opts.working_dir.empty() && chdir(opts.working_dir.c_str()) != 0) _exit(126);
    for (const int fd : opts.inherit_fds) fcntl(fd, F_SETFD, 0);
    if (plan) {
      close(report[0]);
      exec_in_sandbox(*plan, report[1], args.data(), envp.data());
    }
    execvpe(args[0], args.data(), envp.data());
    const char msg[] = "exec failed\n";
    (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
    _exit(127);
  }
  setpgid(pid, pid);
  if (opts.on_start) opts.on_start(pid);
  close(pipefd[1]);
  if (plan) close(report[1]);

  ProcessResult r;
  const auto deadline = t0 + std::chrono::duration<double>(opts.timeout_s);
  char buf[65536];
  bool open_pipe = true, reaped = false;
  int status = 0;
  auto append = [&](ssize_t n) {
    if (r.output.size() < opts.max_output)
      r.output.append(buf, static_cast<size_t>(std::min<ssize_t>(n, opts.max_output - r.output.size())));
  };
  auto next_tick = t0 + std::chrono::milliseconds(100);
  while (open_pipe) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      r.timed_out = true;
      break;
    }
    if ((opts.on_tick || opts.stop) && now >= next_tick) {
      if (opts.on_tick) opts.on_tick();
      if (opts.stop && opts.stop()) {
        r.stopped = true;
        break;
      }
      next_tick = now + std::chrono::milliseconds(100);
    }
    const int wait_ms = static_cast<int>(std::chrono::duration<double, std::milli>(deadline - now).count()) + 1;
    pollfd pfd{pipefd[0], POLLIN, 0};
    const int pr = poll(&pfd, 1, std::min(wait_ms, 100));
    if (pr < 0 && errno != EINTR) break;
    if (pr > 0) {
      const ssize_t n = read(pipefd[0], buf, sizeof(buf));
      if (n <= 0) open_pipe = false;
      else append(n);
    } else if (pr == 0 && waitpid(pid, &status, WNOHANG) == pid) {
      // The child is gone; a grandchild may still hold the pipe: end the group, drain.
      reaped = true;
      kill(-pid, SIGKILL);
      fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
      ssize_t n;
      while ((n = read(pipefd[0], buf, sizeof(buf))) > 0) append(n);
      break;
    }
  }
  kill(-pid, SIGKILL);  // on timeout the whole group; otherwise leftover grandchildren
  close(pipefd[0]);
  if (!reaped)
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (plan) {
    // In namespaces the worker is the grandchild of the child reaped above: its own status
    // comes from the namespace's init.
    const SandboxReport rep = read_sandbox_report(report[0]);
    close(report[0]);
    r.sandbox = plan->description + (rep.note.empty() ? "" : " (" + rep.note + ")");
    r.sandbox_error = rep.error;
    if (rep.has_status) status = rep.status;
  }
  if (!r.timed_out && !r.stopped) {
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  }
  return r;
}

std::vector<std::filesystem::path> running_code_paths() {
  std::vector<std::filesystem::path> paths = {self_executable()};
  // Every shared object loaded now (the fk library when it is a shared one): the libraries
  // found through the executable's RUNPATH (an offline pack's .deps/lib under /tmp) would be
  // hidden from the worker otherwise, and it would die in the loader before reaching main.
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] == '/')
          static_cast<std::vector<std::filesystem::path>*>(out)->emplace_back(info->dlpi_name);
        return 0;
      },
      &paths);
  if (const char* ld = std::getenv("LD_LIBRARY_PATH")) {
    std::stringstream dirs(ld);
    for (std::string d; std::getline(dirs, d, ':');)
      if (!d.empty()) paths.emplace_back(d);
  }
  return paths;
}

}  // namespace fk::bench
