// The switch of fused_moe's in-kernel routing (moe_route_switch.h).
#include <atomic>

#include "ops/common/env_switch.h"
#include "ops/moe/moe_route_switch.h"

namespace fk::ops::moe_decode {
namespace {

std::atomic<int> route_in_kernel_state{-1};  // -1: not read from the environment yet

}  // namespace

bool route_in_kernel() {
  int v = route_in_kernel_state.load(std::memory_order_relaxed);
  if (v < 0) {
    v = env_switch_on("FK_MOE_ROUTE_IN_KERNEL", /*default_on=*/false) ? 1 : 0;
    route_in_kernel_state.store(v, std::memory_order_relaxed);
  }
  return v == 1;
}

void set_route_in_kernel(bool on) { route_in_kernel_state.store(on ? 1 : 0, std::memory_order_relaxed); }

}  // namespace fk::ops::moe_decode
