#include "harness/time/kernel_ownership.h"

#include <algorithm>

namespace fk::bench {

std::vector<std::string> kernels_not_its_own(const std::vector<KernelRecord>& records,
                                             const std::vector<CallWindow>& windows,
                                             const std::vector<std::string>& own_functions) {
  std::vector<std::string> out;
  for (const KernelRecord& k : records) {
    if (k.kind != TraceKind::kernel) continue;
    const auto in_candidate_call = [&](const CallWindow& w) {
      return w.candidate && k.start_ns >= w.from_ns && k.start_ns <= w.to_ns;
    };
    if (std::none_of(windows.begin(), windows.end(), in_candidate_call)) continue;
    if (!std::binary_search(own_functions.begin(), own_functions.end(), k.name)) out.push_back(k.name);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace fk::bench
