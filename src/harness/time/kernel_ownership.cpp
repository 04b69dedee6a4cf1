#include "harness/time/kernel_ownership.h"

#include <algorithm>

namespace fk::bench {

const CallWindow* window_of(const KernelRecord& record, const std::vector<CallWindow>& windows) {
  const auto in = [&](const CallWindow& w) { return record.start_ns >= w.from_ns && record.start_ns <= w.to_ns; };
  const auto it = std::find_if(windows.begin(), windows.end(), in);
  return it == windows.end() ? nullptr : &*it;
}

std::vector<std::string> kernels_not_its_own(const std::vector<KernelRecord>& records,
                                             const std::vector<CallWindow>& windows,
                                             const std::vector<std::string>& own_functions) {
  std::vector<std::string> out;
  for (const KernelRecord& k : records) {
    if (k.kind != TraceKind::kernel) continue;
    const CallWindow* w = window_of(k, windows);
    if (w == nullptr || !w->candidate) continue;
    if (!std::binary_search(own_functions.begin(), own_functions.end(), k.name)) out.push_back(k.name);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace fk::bench
