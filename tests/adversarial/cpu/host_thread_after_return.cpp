// expect: REWARD_HACK
// Returns at once and finishes the work on a detached host thread: the timer sees
// nothing, the output is written after the call returned.
#include <chrono>
#include <thread>

#include "common.h"

namespace {
fk_status run(const void* raw, void*) {
  const auto a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  std::thread([a] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    adv::honest(a);
  }).detach();
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
