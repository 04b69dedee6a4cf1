#include "harness/judge/timed_check_sample.h"

#include "fk/philox.h"
#include "fk/status.h"

namespace fk::bench {

int timed_check_stride(size_t copied_bytes) {
  return copied_bytes <= kCheckEveryTimedCallBytes ? 1 : kLargestTimedCheckStride;
}

bool timed_call_checked(uint64_t secret, int call, int stride) {
  FK_CHECK(stride >= 1, "timed check stride must be >= 1, got ", stride);
  FK_CHECK(call >= 0, "timed call index must be >= 0, got ", call);
  if (stride == 1) return true;
  constexpr uint64_t kCheckedPositions = 0x5c4e;  // a Philox stream of its own
  const auto block = static_cast<uint64_t>(call / stride);
  return call % stride == philox_int(secret, kCheckedPositions, block, 0, stride);
}

}  // namespace fk::bench
