// Copies of recurrent state kept under the hash of the KV block they end at: prefix caching
// of recurrent state. A sequence's state after a full block is checkpointed under that
// block's chained hash (block_hash.h); a later sequence whose cached KV prefix ends at the
// same block restores it instead of recomputing the prefix. Entries are slots like a
// RecurrentSlotPool's (one allocation on the pool's device); when all are taken, a new
// checkpoint evicts the least recently used one.
#pragma once
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "fk/tensor.h"

namespace fk::runtime {

class RecurrentSlotPool;

class RecurrentCheckpointStore {
 public:
  // `num_entries` (>= 1) checkpoints of `pool`'s slot size, on its device.
  RecurrentCheckpointStore(const RecurrentSlotPool& pool, int64_t num_entries, void* stream = nullptr);

  // One owner: a copy would share the entries but not the record of what they hold.
  RecurrentCheckpointStore(const RecurrentCheckpointStore&) = delete;
  RecurrentCheckpointStore& operator=(const RecurrentCheckpointStore&) = delete;
  RecurrentCheckpointStore(RecurrentCheckpointStore&&) = default;
  RecurrentCheckpointStore& operator=(RecurrentCheckpointStore&&) = default;

  int64_t capacity() const { return static_cast<int64_t>(entry_hash_.size()); }
  int64_t size() const { return static_cast<int64_t>(index_.size()); }
  int64_t bytes_per_entry() const { return bytes_per_entry_; }
  Device device() const { return storage_.device(); }
  int64_t evictions() const { return evictions_; }
  bool contains(uint64_t block_hash) const { return index_.contains(block_hash); }

  // Where to write the checkpoint for `block_hash`: its existing entry, or a free one (the
  // least recently used entry is evicted when none is free). Marks it most recently used.
  void* entry_for_write(uint64_t block_hash);
  // The checkpoint under `block_hash`, marked most recently used; nullptr when there is none.
  const void* find(uint64_t block_hash);
  // Drops the checkpoint under `block_hash`, if any.
  void erase(uint64_t block_hash);
  void clear();

 private:
  void* entry_ptr(int32_t entry) const;

  int64_t bytes_per_entry_ = 0;
  Tensor storage_;  // u8 [capacity, bytes_per_entry]
  std::vector<uint64_t> entry_hash_;  // the hash each entry in use is stored under
  std::vector<int32_t> free_;
  std::list<int32_t> lru_;  // most recently used first
  std::unordered_map<uint64_t, std::pair<int32_t, std::list<int32_t>::iterator>> index_;
  int64_t evictions_ = 0;
};

}  // namespace fk::runtime
