// Fresh seeds for every test run, reproducible through FK_TEST_SEED.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

#include "fk/runtime.h"

namespace fk::test {

inline uint64_t seed_base() {
  static const uint64_t base = [] {
    if (const char* s = std::getenv("FK_TEST_SEED")) return static_cast<uint64_t>(std::stoull(s));
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }();
  return base;
}

// A distinct seed for each (test, index).
inline uint64_t seed_for(const std::string& name, uint64_t index = 0) {
  return seed_base() ^ (std::hash<std::string>{}(name) * 0x9E3779B97F4A7C15ull) ^ (index * 0xD1B54A32D192ED03ull);
}

}  // namespace fk::test

// First statement of a GPU test: skips cleanly without a device.
#define FK_REQUIRE_GPU()                                             \
  do {                                                               \
    if (!::fk::rt::cuda_available()) GTEST_SKIP() << "no CUDA device"; \
  } while (0)
