// A launch path's answer to "is this variant of my op selected?" (OpRegistry::variant_on),
// kept until the selection changes: asking the registry takes its lock, while comparing the
// selection's epoch is one atomic load, cheap enough for every launch. Declare one per
// variant as a function-local or namespace-scope static:
//   static const VariantFlag no_autotune("linear", "no_autotune");
//   if (no_autotune.on()) ...
#pragma once
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "fk/op_registry.h"

namespace fk::ops {

class VariantFlag {
 public:
  constexpr VariantFlag(const char* op, const char* name) : op_(op), name_(name) {}

  bool on() const {
    const uint64_t epoch = OpRegistry::global().variant_epoch();
    uint64_t cached = cached_.load(std::memory_order_acquire);
    if (cached >> 1 != epoch) {
      // Epoch and answer in one word, so that a reader never pairs one with the other's
      // stale value; two threads refreshing at once store the same thing.
      cached = (epoch << 1) | (OpRegistry::global().variant_on(op_, name_) ? 1u : 0u);
      cached_.store(cached, std::memory_order_release);
    }
    return (cached & 1u) != 0;
  }

 private:
  const char* op_;
  const char* name_;
  mutable std::atomic<uint64_t> cached_{~uint64_t{0}};  // no epoch reaches 2^63 - 1
};

// One variant name registered for several ops, asked on a launch path shared by them
// (the op's name at hand): false for an op outside the list, which has no such variant.
class VariantFlagPerOp {
 public:
  VariantFlagPerOp(std::initializer_list<const char*> ops, const char* name) : VariantFlagPerOp(std::span(ops), name) {}
  VariantFlagPerOp(std::span<const char* const> ops, const char* name) {
    for (const char* op : ops) flags_.push_back({op, std::make_unique<VariantFlag>(op, name)});
  }

  bool on(std::string_view op) const {
    for (const auto& [name, flag] : flags_)
      if (op == name) return flag->on();
    return false;
  }

 private:
  std::vector<std::pair<const char*, std::unique_ptr<VariantFlag>>> flags_;
};

}  // namespace fk::ops
