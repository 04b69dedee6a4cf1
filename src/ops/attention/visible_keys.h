// How many KV positions query i (0-based among the sequence's qo_len queries) sees: the
// queries are the sequence's last qo_len tokens, so query i sits at position
// kv_len - qo_len + i; causal masking hides what follows it, a left window of w hides
// keys more than w positions before it (window_left < 0: no window).
// One rule for the workloads' cost model and the prefill plan's choice of kernel path.
#pragma once
#include <algorithm>
#include <cstdint>

namespace fk::ops::attn {

inline int64_t visible_keys(int64_t qo_len, int64_t kv_len, int64_t i, bool causal, int64_t window_left) {
  const int64_t p = kv_len - qo_len + i;
  const int64_t hi = causal ? p + 1 : kv_len;
  const int64_t lo = window_left >= 0 ? std::max<int64_t>(0, p - window_left) : 0;
  return hi - lo;
}

}  // namespace fk::ops::attn
