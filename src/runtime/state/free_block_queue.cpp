#include "runtime/state/free_block_queue.h"

#include "fk/status.h"

namespace fk::engine {

FreeBlockQueue::FreeBlockQueue(int32_t num_blocks) {
  FK_CHECK(num_blocks >= 0, "num_blocks must be >= 0, got ", num_blocks);
  const auto n = static_cast<size_t>(num_blocks);
  prev_.assign(n, -1);
  next_.assign(n, -1);
  in_queue_.assign(n, false);
  for (int32_t b = 0; b < num_blocks; ++b) push_back(b);
}

void FreeBlockQueue::link_between(int32_t block, int32_t before, int32_t after) {
  const auto i = static_cast<size_t>(block);
  if (in_queue_[i]) FK_FAIL(FK_ERR_INTERNAL, "free block queue: block ", block, " is already free");
  prev_[i] = before;
  next_[i] = after;
  if (before >= 0) next_[static_cast<size_t>(before)] = block; else head_ = block;
  if (after >= 0) prev_[static_cast<size_t>(after)] = block; else tail_ = block;
  in_queue_[i] = true;
  ++size_;
}

void FreeBlockQueue::push_front(int32_t block) { link_between(block, -1, head_); }
void FreeBlockQueue::push_back(int32_t block) { link_between(block, tail_, -1); }

void FreeBlockQueue::remove(int32_t block) {
  const auto i = static_cast<size_t>(block);
  if (!in_queue_[i]) FK_FAIL(FK_ERR_INTERNAL, "free block queue: block ", block, " is not free");
  const int32_t before = prev_[i], after = next_[i];
  if (before >= 0) next_[static_cast<size_t>(before)] = after; else head_ = after;
  if (after >= 0) prev_[static_cast<size_t>(after)] = before; else tail_ = before;
  prev_[i] = next_[i] = -1;
  in_queue_[i] = false;
  --size_;
}

int32_t FreeBlockQueue::pop_front() {
  if (head_ < 0) FK_FAIL(FK_ERR_INTERNAL, "free block queue: pop from an empty queue");
  const int32_t block = head_;
  remove(block);
  return block;
}

std::vector<int32_t> FreeBlockQueue::to_vector() const {
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(size_));
  for (int32_t b = head_; b >= 0; b = next_[static_cast<size_t>(b)]) out.push_back(b);
  return out;
}

}  // namespace fk::engine
