// Device state a candidate must not change to make itself look faster: a persisting-L2
// access policy on the harness's stream, or an L2 set-aside for persisting accesses.
#pragma once
#include <string>

namespace fk::bench {

// "" when clean, else what was tampered with. CPU-only builds: always "".
std::string l2_tampering(void* stream);

}  // namespace fk::bench
