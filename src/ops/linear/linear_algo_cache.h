// The cuBLASLt plan cache of the linear op: the heuristic query costs tens of
// microseconds, so it runs once per problem; later calls with the same key look the
// algorithm up under a shared lock. No CUDA types here, so the cache is tested on the CPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace fk::ops {

// Everything cuBLASLt's heuristic depends on for one linear call: the problem (sizes,
// leading dimensions, dtypes, bias), the device, and the alignments it may assume.
struct LinearGemmKey {
  int64_t m = 0, n = 0, k = 0;
  int64_t ld_input = 0, ld_weight = 0, ld_out = 0;
  uint8_t in_dtype = 0, out_dtype = 0;
  bool bias = false;
  int8_t device = 0;
  uint16_t align_input = 0, align_weight = 0, align_out = 0, align_bias = 0;  // bytes, <= 256
  bool operator==(const LinearGemmKey&) const = default;
};

struct LinearGemmKeyHash {
  size_t operator()(const LinearGemmKey& k) const noexcept {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; h ^= h >> 29; };
    mix(static_cast<uint64_t>(k.m));
    mix(static_cast<uint64_t>(k.n));
    mix(static_cast<uint64_t>(k.k));
    mix(static_cast<uint64_t>(k.ld_input));
    mix(static_cast<uint64_t>(k.ld_weight));
    mix(static_cast<uint64_t>(k.ld_out));
    mix(static_cast<uint64_t>(k.in_dtype) | static_cast<uint64_t>(k.out_dtype) << 8 |
        static_cast<uint64_t>(k.bias) << 16 | static_cast<uint64_t>(static_cast<uint8_t>(k.device)) << 24);
    mix(static_cast<uint64_t>(k.align_input) | static_cast<uint64_t>(k.align_weight) << 16 |
        static_cast<uint64_t>(k.align_out) << 32 | static_cast<uint64_t>(k.align_bias) << 48);
    return static_cast<size_t>(h);
  }
};

// Thread-safe memo: get_or_make(key, make) returns the stored value, calling make() (outside
// the lock) on a miss. Two threads missing together both compute; the first stored wins,
// so every caller of one key sees one value.
template <class Key, class Value, class Hash = std::hash<Key>>
class ConcurrentCache {
 public:
  template <class Make>
  Value get_or_make(const Key& key, Make&& make) {
    {
      std::shared_lock lk(mu_);
      auto it = map_.find(key);
      if (it != map_.end()) return it->second;
    }
    Value v = make();
    std::unique_lock lk(mu_);
    return map_.try_emplace(key, std::move(v)).first->second;
  }
  size_t size() const {
    std::shared_lock lk(mu_);
    return map_.size();
  }
  void clear() {
    std::unique_lock lk(mu_);
    map_.clear();
  }

 private:
  mutable std::shared_mutex mu_;
  std::unordered_map<Key, Value, Hash> map_;
};

// Largest power of two (at most 256) dividing the address: the alignment cuBLASLt may assume.
inline uint16_t pointer_alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint16_t al = 256;
  while (al > 1 && a % al != 0) al = static_cast<uint16_t>(al / 2);
  return al;
}

}  // namespace fk::ops
