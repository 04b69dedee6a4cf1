#include "harness/judge/runner_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "fk/status.h"
#include "harness/sandbox/runner_args.h"
#include "harness/sandbox/seccomp_filter.h"

namespace fk::bench {
namespace fs = std::filesystem;

namespace {

std::string tail_of(const std::string& s) { return s.size() > 2000 ? s.substr(s.size() - 2000) : s; }

int64_t cpu_ns(const std::optional<clockid_t>& clock) {
  timespec ts;
  if (!clock || clock_gettime(*clock, &ts) != 0) return -1;
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// schedstat's second field: nanoseconds its thread has been ready to run but waited for a
// processor. -1 when it cannot be read.
int64_t run_delay_ns(int schedstat_fd) {
  if (schedstat_fd < 0) return -1;
  char buf[128];
  const ssize_t n = pread(schedstat_fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return -1;
  buf[n] = 0;
  unsigned long long ran = 0, waited = 0;
  if (std::sscanf(buf, "%llu %llu", &ran, &waited) != 2) return -1;
  return static_cast<int64_t>(waited);
}

}  // namespace

RunnerProcess::RunnerProcess(RunnerSpec spec) : spec_(std::move(spec)) {
  fs::create_directories(spec_.dir);
  int sv[2];
  FK_CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0, "socketpair: ", std::strerror(errno));
  channel_ = sv[0];
  stamp_received_messages(channel_);  // without it, a reply's time is its arrival here
  arena_fd_ = memfd_create("fk-runner-arena", MFD_CLOEXEC);
  if (arena_fd_ < 0) {
    close(sv[0]);
    close(sv[1]);
    FK_FAIL(FK_ERR_INTERNAL, "memfd_create: ", std::strerror(errno));
  }
  // The candidate's runner is fk-runner (no engine in it); the baseline's is this program.
  const std::string program = spec_.library.empty() ? self_executable() : candidate_runner_program();
  std::vector<std::string> argv = {program, "kernels", "runner", "--channel", std::to_string(sv[1]),
                                   "--arena", std::to_string(arena_fd_), "--op", spec_.op,
                                   "--dir", spec_.dir.string(), "--variants", spec_.variants};
  if (spec_.library.empty()) argv.push_back("--baseline");
  else argv.insert(argv.end(), {"--library", spec_.library.string()});
  ProcessOptions po;
  po.timeout_s = spec_.timeout_s;
  po.inherit_fds = {sv[1], arena_fd_};
  const int child_end = sv[1];
  // The child holds its end now: the judge's copy goes, so that the runner's death reads as
  // the end of the stream.
  po.on_start = [this, child_end](int pid) {
    pid_ = pid;
    close(child_end);
  };
  po.stop = [this] { return stop_.load(); };
  // What code needs to load and run (the loader's paths, the threading runtimes' settings),
  // nothing of the harness's own (FK_*, the caches, the results database).
  po.keep_env = {"PATH", "LD_LIBRARY_PATH", "HOME", "LANG", "LC_*", "OMP_*", "MKL_*", "OPENBLAS_*",
                 "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"};
  SandboxOptions& so = po.sandbox.emplace();
  so.nested = true;
  so.work_dir = spec_.dir;
  so.visible = spec_.visible;
  so.visible.push_back(program);
  if (!spec_.library.empty()) so.visible.push_back(spec_.library);
  so.memory_bytes = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  supervisor_ = std::thread([this, argv, po] {
    result_ = run_process(argv, po);
    done_ = true;
  });
  try {
    std::string text;
    // Sent before the implementation is loaded: no candidate code has run yet.
    const RunnerHeader hello = receive(text, "its start");
    if (hello.kind != RunnerMessage::hello) fail_gone("its start");
    guard_ = reinterpret_cast<std::byte*>(hello.value);
    const RunnerHeader loaded = receive(text, "the implementation's loading");
    if (loaded.kind != RunnerMessage::loaded) fail_gone("the implementation's loading");
    if (loaded.status != 0) load_error_ = text.empty() ? "the implementation did not load" : text;
    has_plan_ = loaded.value == 1;
  } catch (...) {
    stop_ = true;
    if (supervisor_.joinable()) supervisor_.join();
    close(channel_);
    close(arena_fd_);
    throw;
  }
}

RunnerProcess::~RunnerProcess() {
  if (schedstat_ >= 0) close(schedstat_);
  if (channel_ >= 0) close(channel_);
  stop_ = true;
  if (supervisor_.joinable()) supervisor_.join();
  if (arena_fd_ >= 0) close(arena_fd_);
}

RunnerHeader RunnerProcess::receive(std::string& text, const char* expecting, int64_t* sent_ns, bool spin) {
  RunnerHeader h;
  std::vector<std::byte> payload;
  if (!receive_runner_message(channel_, h, payload, sent_ns, spin ? kPollForever : 0)) fail_gone(expecting);
  text = payload_text(payload);
  return h;
}

RunnerProcess::Reply RunnerProcess::request(RunnerMessage kind, uint64_t value, const void* payload, size_t bytes,
                                            bool spin) {
  if (spin && !cpu_clock_ && pid_.load() > 0) {
    if (clockid_t c; clock_getcpuclockid(pid_.load(), &c) == 0) cpu_clock_ = c;
    schedstat_ = open(concat("/proc/", pid_.load(), "/schedstat").c_str(), O_RDONLY | O_CLOEXEC);
  }
  const int64_t waited_before = spin ? run_delay_ns(schedstat_) : -1;
  const int64_t cpu_before = spin ? cpu_ns(cpu_clock_) : -1;
  const int64_t start = realtime_ns();
  if (!send_runner_message(channel_, {kind, 0, value}, payload, bytes)) fail_gone("a request");
  Reply r;
  int64_t sent = 0;
  const RunnerHeader h = receive(r.text, "a reply", &sent, spin);
  if (const int64_t cpu_after = spin ? cpu_ns(cpu_clock_) : -1; cpu_before >= 0 && cpu_after >= cpu_before)
    r.cpu_us = static_cast<double>(cpu_after - cpu_before) * 1e-3;
  if (const int64_t waited_after = spin ? run_delay_ns(schedstat_) : -1; waited_before >= 0 && waited_after >= waited_before)
    r.waited_us = static_cast<double>(waited_after - waited_before) * 1e-3;
  // A reply sent before its request was: a runner answering ahead, from a queue of its own.
  if (sent > 0 && sent < start)
    throw RunnerFailure{Verdict::REWARD_HACK, "the runner sent a reply before the request it answers"};
  if (h.kind != RunnerMessage::reply)
    throw RunnerFailure{Verdict::REWARD_HACK, "the runner answered a request with something other than a reply"};
  r.us = static_cast<double>((sent > 0 ? sent : realtime_ns()) - start) * 1e-3;
  r.status = h.status;
  r.value = h.value;
  return r;
}

uint64_t RunnerProcess::map_arena(uint64_t bytes) {
  const Reply r = request(RunnerMessage::map_arena, bytes);
  if (r.status != 0 || r.value == 0)
    throw RunnerFailure{Verdict::RUNTIME_ERROR, concat("the runner could not map its arena: ", r.text)};
  return r.value;
}

void RunnerProcess::fail_gone(const std::string& when) {
  // The channel broke: the runner ended, or its code closed the socket. Give it a moment
  // to end on its own (its exit status says how), then end it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!done_ && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  stop_ = true;
  if (supervisor_.joinable()) supervisor_.join();
  const ProcessResult& pr = result_;
  const std::string who = spec_.library.empty() ? "the baseline's runner" : "the candidate's runner";
  if (!pr.sandbox_error.empty())
    throw RunnerFailure{Verdict::HARNESS_ERROR, concat(who, "'s sandbox could not be set up: ", pr.sandbox_error)};
  if (pr.term_signal == SIGSYS || (pr.exited() && pr.exit_code == kSandboxViolationExit)) {
    std::string call = "a system call it forbids", by = "candidate";
    if (std::ifstream in(spec_.dir / "sandbox_violation"); in) {
      std::getline(in, call);
      std::getline(in, by);
    }
    if (by == "harness" || spec_.library.empty())
      throw RunnerFailure{Verdict::HARNESS_ERROR,
                          concat("the sandbox stopped a system call of ", who, " itself: ", call,
                                 " (the sandbox does not fit this host; FK_SANDBOX=off runs without it)")};
    throw RunnerFailure{Verdict::REWARD_HACK,
                        concat("the sandbox stopped a forbidden system call: ", call,
                               " (a candidate may not start processes, read or steer other processes, open network "
                               "sockets or leave its sandbox)")};
  }
  if (std::ifstream in(spec_.dir / "findings.jsonl"); in) {
    std::string line;
    if (std::getline(in, line) && !line.empty()) {
      const Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_object() && j.value("message", Json()).is_string())
        throw RunnerFailure{Verdict::REWARD_HACK, j["message"].get<std::string>()};
    }
  }
  if (pr.timed_out) throw RunnerFailure{Verdict::TIMEOUT, concat(who, " did not finish within ", spec_.timeout_s, " s")};
  throw RunnerFailure{spec_.library.empty() ? Verdict::HARNESS_ERROR : Verdict::RUNTIME_ERROR,
                      concat(who, " ended (", pr.describe(), ") during ", when, ": ", tail_of(pr.output))};
}

std::map<int, double> RunnerProcess::cpu_seconds_by_thread() const {
  std::map<int, double> out;
  const int pid = pid_.load();
  if (pid <= 0 || done_) return out;
  const std::string dir = concat("/proc/", pid, "/task");
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(dir + "/" + e->d_name + "/schedstat");
    double ns = 0;
    if (in >> ns) out[std::atoi(e->d_name)] = ns * 1e-9;
  }
  closedir(d);
  return out;
}

}  // namespace fk::bench
