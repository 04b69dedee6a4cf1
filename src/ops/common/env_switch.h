// On/off switches of alternative kernel paths, for A/B runs: a path is on unless its
// environment variable is set to "0".
#pragma once
#include <cstdlib>
#include <cstring>

namespace fk::ops {

inline bool env_switch_on(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || std::strcmp(v, "0") != 0;
}

}  // namespace fk::ops
