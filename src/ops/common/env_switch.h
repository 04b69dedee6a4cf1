// On/off switches of alternative kernel paths, for A/B runs: a path that is on by default
// is on unless its environment variable is "0"; one that is off by default is on only when
// it is "1".
#pragma once
#include <cstdlib>
#include <cstring>

namespace fk::ops {

inline bool env_switch_on(const char* name, bool default_on = true) {
  const char* v = std::getenv(name);
  if (v == nullptr) return default_on;
  return default_on ? std::strcmp(v, "0") != 0 : std::strcmp(v, "1") == 0;
}

}  // namespace fk::ops
