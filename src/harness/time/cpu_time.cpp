#include "harness/time/cpu_time.h"

#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>

namespace fk::bench {

namespace {
// The CPU clock of any thread of this process by its id, as glibc's pthread_getcpuclockid
// makes it (the kernel's MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)): scheduler-precise.
clockid_t thread_clock(int tid) { return static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6u); }
}  // namespace

std::map<int, double> other_threads_cpu_seconds() {
  std::map<int, double> out;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return out;
  const int self = static_cast<int>(gettid());
  while (const dirent* e = readdir(dir)) {
    const int tid = std::atoi(e->d_name);
    if (tid <= 0 || tid == self) continue;
    timespec ts{};
    if (clock_gettime(thread_clock(tid), &ts) == 0)  // fails for a thread that just ended
      out[tid] = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
  closedir(dir);
  return out;
}

double cpu_seconds_between(const std::map<int, double>& before, const std::map<int, double>& after) {
  double used = 0;
  for (const auto& [tid, seconds] : after) {
    const auto it = before.find(tid);
    used += seconds - (it == before.end() ? 0.0 : it->second);
  }
  return used;
}

}  // namespace fk::bench
