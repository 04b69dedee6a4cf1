// Per-sequence recurrent state (conv + SSM / linear-attention state) of one StateSpec
// group: a fixed number of bytes per sequence whatever its length, so each sequence gets one
// fixed-size slot of a single allocation on the model's device (the CPU backend's lives on
// the host). Sized by a slot count or, like the KV cache, from a byte budget.
//
// A slot's life: allocate (zeroed: a fresh sequence starts from the zero state) -> the ops
// read and update it in place through state() / layer_state() -> free. fork copies a
// sequence's state into another's slot (parallel sampling, a forked sequence);
// checkpoint / restore copy it to and from a RecurrentCheckpointStore under the hash of a
// KV block, so that prefix caching covers recurrent state at block boundaries.
//
// Copies are issued on the given stream (on the CPU they are done when the call returns);
// the caller orders them against the ops that use the slots.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "fk/tensor.h"
#include "runtime/state/recurrent_slot_layout.h"
#include "runtime/state/state_spec.h"

namespace fk::runtime {

// Names a sequence to the state pools (the engine uses its requests' admission numbers).
using SequenceId = int64_t;

class RecurrentCheckpointStore;

class RecurrentSlotPool {
 public:
  // `num_slots` slots (>= 1) for the recurrent_slot group `spec`, zeroed.
  RecurrentSlotPool(const StateSpec& spec, int64_t num_slots, Device device, void* stream = nullptr);
  // As many slots as `budget_bytes` holds; throws naming both sizes when it holds none.
  static RecurrentSlotPool from_budget(const StateSpec& spec, int64_t budget_bytes, Device device,
                                       void* stream = nullptr);
  // The slots `budget_bytes` holds (0 when it is too small for one).
  static int64_t slots_in_budget(const StateSpec& spec, int64_t budget_bytes);

  // One owner: a copy would share the slots but not the record of who holds them.
  RecurrentSlotPool(const RecurrentSlotPool&) = delete;
  RecurrentSlotPool& operator=(const RecurrentSlotPool&) = delete;
  RecurrentSlotPool(RecurrentSlotPool&&) = default;
  RecurrentSlotPool& operator=(RecurrentSlotPool&&) = default;

  const RecurrentSlotLayout& layout() const { return layout_; }
  Device device() const { return storage_.device(); }
  int64_t capacity() const { return capacity_; }
  int64_t num_used() const { return static_cast<int64_t>(slot_of_.size()); }
  int64_t num_free() const { return static_cast<int64_t>(free_.size()); }
  int64_t bytes_per_slot() const { return layout_.slot_bytes(); }
  int64_t bytes() const { return static_cast<int64_t>(storage_.nbytes()); }

  // Gives `seq` a free slot, zeroed on `stream`, and returns its index. Throws when `seq`
  // already holds one, and (FK_ERR_OUT_OF_MEMORY) when every slot is held.
  int32_t allocate(SequenceId seq, void* stream = nullptr);
  bool holds(SequenceId seq) const { return slot_of_.contains(seq); }
  // Throws naming `seq` when it holds no slot.
  int32_t slot_of(SequenceId seq) const;
  // Gives seq's slot back; throws naming `seq` when it holds none.
  void free(SequenceId seq);

  // dst's slot gets a copy of src's state; dst is given a slot first when it holds none.
  // Later updates of either do not show in the other.
  void fork(SequenceId src, SequenceId dst, void* stream = nullptr);
  // Copies src's state over dst's; both must hold slots.
  void copy(SequenceId src, SequenceId dst, void* stream = nullptr);
  // Resets seq's state to zeros.
  void zero(SequenceId seq, void* stream = nullptr);

  // Stores a copy of seq's state in `store` under `block_hash` (replacing an older copy).
  void checkpoint(SequenceId seq, uint64_t block_hash, RecurrentCheckpointStore& store, void* stream = nullptr);
  // Copies the state stored under `block_hash` into seq's slot; false (and seq's state
  // unchanged) when the store has none.
  bool restore(SequenceId seq, uint64_t block_hash, RecurrentCheckpointStore& store, void* stream = nullptr);

  // Tensor `tensor` (an index into layout().tensors(), or its name) of the model's layer
  // `layer` in slot `slot`, shaped as the spec declares it.
  TensorView state(int32_t slot, int64_t layer, int64_t tensor = 0) const;
  TensorView state(int32_t slot, int64_t layer, std::string_view tensor) const;
  // That tensor of every slot: [capacity, shape...], slot-strided, for batched ops that take
  // the sequences' slot indices.
  TensorView layer_state(int64_t layer, int64_t tensor = 0) const;
  // The whole of slot `slot` as u8 [bytes_per_slot()].
  TensorView slot_bytes(int32_t slot) const;

 private:
  uint8_t* slot_ptr(int32_t slot) const;
  void check_slot(int32_t slot) const;

  RecurrentSlotLayout layout_;
  int64_t capacity_ = 0;
  Tensor storage_;  // u8 [capacity, bytes_per_slot]
  std::vector<int32_t> free_;  // a stack: the most recently freed slot is reused first
  std::unordered_map<SequenceId, int32_t> slot_of_;
};

}  // namespace fk::runtime
