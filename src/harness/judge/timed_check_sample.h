// Which timed calls have their outputs checked against the baseline's outputs on the same
// fresh inputs. Checking means copying both outputs to the host and comparing them there:
// nothing against the call for small outputs, but for outputs of hundreds of megabytes it
// costs many times the kernel. So small outputs are checked on every timed call, larger
// ones on one call of every `stride` consecutive calls, at a position drawn from the
// secret seed: a candidate cannot know which of its calls are checked, and one that is
// wrong on a fraction f of its timed calls escapes n of them with probability about
// (1 - f/stride)^n.
#pragma once
#include <cstddef>
#include <cstdint>

namespace fk::bench {

// Outputs (all written tensors of one call) up to this size are checked on every call.
inline constexpr size_t kCheckEveryTimedCallBytes = size_t{16} << 20;
// At least one timed call in this many is checked.
inline constexpr int kLargestTimedCheckStride = 4;

// 1 (every call) up to kCheckEveryTimedCallBytes of output, else kLargestTimedCheckStride.
int timed_check_stride(size_t output_bytes);

// Whether timed call `call` (0-based, warm-up calls included) is checked: exactly one
// call of each block [k * stride, (k + 1) * stride), at a position drawn from `secret`.
bool timed_call_checked(uint64_t secret, int call, int stride);

}  // namespace fk::bench
