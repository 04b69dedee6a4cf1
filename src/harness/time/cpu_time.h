// CPU time of the process's other threads, each on its own clock: what they used between
// two samples. The harness uses it to see a candidate's threads busy while the baseline
// is timed (work beside the baseline slows it down, and the candidate's speedup goes up).
// The process-wide CPU clock will not do: with a CPU-time limit armed (the sandbox's) the
// kernel advances it in scheduler ticks, milliseconds at a time.
#pragma once
#include <map>

namespace fk::bench {

// CPU seconds used so far by every thread of this process except the calling one, by
// thread id (Linux: /proc/self/task and each thread's own CPU clock).
std::map<int, double> other_threads_cpu_seconds();

// CPU seconds the other threads used from `before` to `after`: threads that started in
// between count whole, threads gone by `after` are left out.
double cpu_seconds_between(const std::map<int, double>& before, const std::map<int, double>& after);

}  // namespace fk::bench
