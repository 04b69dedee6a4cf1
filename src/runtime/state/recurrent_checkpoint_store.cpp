#include "runtime/state/recurrent_checkpoint_store.h"

#include <limits>

#include "fk/status.h"
#include "runtime/state/recurrent_slot_pool.h"

namespace fk::runtime {

RecurrentCheckpointStore::RecurrentCheckpointStore(const RecurrentSlotPool& pool, int64_t num_entries, void* stream)
    : bytes_per_entry_(pool.bytes_per_slot()) {
  FK_CHECK(num_entries >= 1 && num_entries <= std::numeric_limits<int32_t>::max(),
           "recurrent checkpoint store of group '", pool.layout().group(), "' needs an entry count in [1, 2^31), got ",
           num_entries);
  FK_CHECK(num_entries <= std::numeric_limits<int64_t>::max() / bytes_per_entry_, "recurrent checkpoint store: ",
           num_entries, " entries of ", bytes_per_entry_, " bytes overflow a byte count");
  storage_ = Tensor::empty({num_entries, bytes_per_entry_}, DType::u8, pool.device(), stream);
  entry_hash_.resize(static_cast<size_t>(num_entries));
  for (int64_t e = num_entries - 1; e >= 0; --e) free_.push_back(static_cast<int32_t>(e));
}

void* RecurrentCheckpointStore::entry_ptr(int32_t entry) const {
  return storage_.data_as<uint8_t>() + static_cast<int64_t>(entry) * bytes_per_entry_;
}

void* RecurrentCheckpointStore::entry_for_write(uint64_t block_hash) {
  if (auto it = index_.find(block_hash); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.second);
    return entry_ptr(it->second.first);
  }
  if (free_.empty()) {  // evict the least recently used checkpoint
    const int32_t victim = lru_.back();
    index_.erase(entry_hash_[static_cast<size_t>(victim)]);
    lru_.pop_back();
    free_.push_back(victim);
    ++evictions_;
  }
  const int32_t e = free_.back();
  free_.pop_back();
  entry_hash_[static_cast<size_t>(e)] = block_hash;
  lru_.push_front(e);
  index_.emplace(block_hash, std::make_pair(e, lru_.begin()));
  return entry_ptr(e);
}

const void* RecurrentCheckpointStore::find(uint64_t block_hash) {
  const auto it = index_.find(block_hash);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.second);
  return entry_ptr(it->second.first);
}

void RecurrentCheckpointStore::erase(uint64_t block_hash) {
  const auto it = index_.find(block_hash);
  if (it == index_.end()) return;
  const int32_t e = it->second.first;
  lru_.erase(it->second.second);
  index_.erase(it);
  free_.push_back(e);
}

void RecurrentCheckpointStore::clear() {
  while (!index_.empty()) erase(index_.begin()->first);
}

}  // namespace fk::runtime
