// Device state a candidate must not change to make itself look faster: a persisting-L2
// access policy on the harness's stream, or the L2 set-aside for persisting accesses.
#pragma once
#include <string>

namespace fk::bench {

// Records the device's state before any candidate runs (devices come with a non-zero
// default set-aside: 9.4 MiB was seen on an H100). Call once per worker, first.
void l2_guard_arm();
// "" when the state is as armed, else what was tampered with. CPU-only builds: always "".
std::string l2_tampering(void* stream);

}  // namespace fk::bench
