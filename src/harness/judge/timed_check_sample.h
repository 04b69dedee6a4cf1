// Which timed calls are checked when checking one means copying to the host: an op's own
// output check (OpDef::check_outputs) reads the whole case there. (Element-wise outputs are
// compared where they live, on every timed call: harness/check/outside_tolerance.h.) For a
// small case that costs nothing against the call, for one of hundreds of megabytes many
// times the kernel. So small cases are checked on every timed call, larger ones on one call
// of every `stride` consecutive calls, at a position drawn from the secret seed: a
// candidate cannot know which of its calls are checked, and one that is wrong on a
// fraction f of its timed calls escapes n of them with probability about (1 - f/stride)^n.
#pragma once
#include <cstddef>
#include <cstdint>

namespace fk::bench {

// Cases (all tensors of one call) up to this size are checked on every call.
inline constexpr size_t kCheckEveryTimedCallBytes = size_t{16} << 20;
// At least one timed call in this many is checked.
inline constexpr int kLargestTimedCheckStride = 4;

// 1 (every call) up to kCheckEveryTimedCallBytes copied, else kLargestTimedCheckStride.
int timed_check_stride(size_t copied_bytes);

// Whether timed call `call` (0-based, warm-up calls included) is checked: exactly one
// call of each block [k * stride, (k + 1) * stride), at a position drawn from `secret`.
bool timed_call_checked(uint64_t secret, int call, int stride);

}  // namespace fk::bench
