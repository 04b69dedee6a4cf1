// The KV-cache blocks nobody references, in the order they are to be reused: a doubly
// linked list threaded through two index arrays, so that taking a cached block back out
// of the middle (a prefix-cache hit on a block whose last user has finished) is O(1).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fk::engine {

class FreeBlockQueue {
 public:
  // Starts with every block 0..num_blocks-1 free, in id order.
  explicit FreeBlockQueue(int32_t num_blocks);

  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool contains(int32_t block) const { return in_queue_[static_cast<size_t>(block)]; }
  int32_t front() const { return head_; }  // -1 when empty

  void push_front(int32_t block);  // reused next
  void push_back(int32_t block);   // reused last
  void remove(int32_t block);      // must be in the queue
  int32_t pop_front();             // must not be empty

  // Every block, in queue order (tests and invariant checks).
  std::vector<int32_t> to_vector() const;

 private:
  void link_between(int32_t block, int32_t before, int32_t after);

  std::vector<int32_t> prev_, next_;  // -1 = none
  std::vector<bool> in_queue_;
  int32_t head_ = -1, tail_ = -1;
  int64_t size_ = 0;
};

}  // namespace fk::engine
