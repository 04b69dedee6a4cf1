// The arrays of one engine step (token ids, positions, cache slots, page tables, sampling
// parameters) packed back to back into one host block and copied to the device in a single
// transfer. Separate copies from pageable vectors cost a blocking driver round trip each:
// about 50 us of host time per batch-1 decode step, in which the GPU waited.
//
// The layout is a function of the order and sizes of place() calls, so a step of the same
// shape (a captured graph's padded decode batch) finds every array at the address the graph
// recorded. The arena's memory is never reallocated.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fk/status.h"
#include "fk/tensor.h"

namespace fk::engine {

class StepArena {
 public:
  StepArena() = default;
  // capacity: bytes for the largest step, alignment padding included (see padded_bytes).
  // pinned: stage in page-locked memory (CUDA backend).
  StepArena(size_t capacity, Device device, bool pinned, void* stream);

  // Room one array of `count` elements of `elem_size` bytes takes, with its alignment.
  static size_t padded_bytes(int64_t count, size_t elem_size) {
    return (static_cast<size_t>(count) * elem_size + kAlign - 1) / kAlign * kAlign;
  }

  void begin() { used_ = 0; }  // a new step: the arrays placed before are forgotten
  // Stages `values` and returns where the device will hold them after upload(): a 1-D view
  // of values.size() elements, or of `view_count` (>= values.size()) when given.
  template <class T>
  TensorView place(const std::vector<T>& values, DType dtype, int64_t view_count = -1) {
    return place_bytes(values.data(), values.size(), sizeof(T), dtype, view_count);
  }
  // Stages `values` as the last array: its view runs to the end of the arena.
  template <class T>
  TensorView place_last(const std::vector<T>& values, DType dtype) {
    const size_t offset = aligned(used_);
    FK_CHECK(offset <= device_.nbytes(), "step arena: full");
    return place(values, dtype, static_cast<int64_t>((device_.nbytes() - offset) / sizeof(T)));
  }
  void upload(void* stream);  // one copy of everything placed since begin()
  size_t used_bytes() const { return used_; }

 private:
  static constexpr size_t kAlign = 256;  // what cudaMalloc gives: vector loads of any width
  static size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
  TensorView place_bytes(const void* data, size_t count, size_t elem_size, DType dtype, int64_t view_count);

  Tensor device_, host_;
  size_t used_ = 0;
};

}  // namespace fk::engine
