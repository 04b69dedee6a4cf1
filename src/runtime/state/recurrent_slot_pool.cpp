#include "runtime/state/recurrent_slot_pool.h"

#include <algorithm>
#include <limits>

#include "fk/runtime.h"
#include "fk/status.h"
#include "runtime/state/recurrent_checkpoint_store.h"

namespace fk::runtime {

namespace {

int64_t checked_num_slots(const RecurrentSlotLayout& layout, int64_t num_slots) {
  FK_CHECK(num_slots >= 1 && num_slots <= std::numeric_limits<int32_t>::max(), "recurrent state pool of group '",
           layout.group(), "' needs a slot count in [1, 2^31), got ", num_slots);
  FK_CHECK(num_slots <= std::numeric_limits<int64_t>::max() / layout.slot_bytes(), "recurrent state pool of group '",
           layout.group(), "': ", num_slots, " slots of ", layout.slot_bytes(), " bytes overflow a byte count");
  return num_slots;
}

}  // namespace

RecurrentSlotPool::RecurrentSlotPool(const StateSpec& spec, int64_t num_slots, Device device, void* stream)
    : layout_(spec), capacity_(checked_num_slots(layout_, num_slots)) {
  storage_ = Tensor::zeros({capacity_, layout_.slot_bytes()}, DType::u8, device, stream);
  free_.reserve(static_cast<size_t>(capacity_));
  for (int64_t s = capacity_ - 1; s >= 0; --s) free_.push_back(static_cast<int32_t>(s));  // slot 0 first
}

int64_t RecurrentSlotPool::slots_in_budget(const StateSpec& spec, int64_t budget_bytes) {
  const RecurrentSlotLayout layout(spec);
  if (budget_bytes <= 0) return 0;
  return std::min<int64_t>(budget_bytes / layout.slot_bytes(), std::numeric_limits<int32_t>::max());
}

RecurrentSlotPool RecurrentSlotPool::from_budget(const StateSpec& spec, int64_t budget_bytes, Device device,
                                                 void* stream) {
  const int64_t slots = slots_in_budget(spec, budget_bytes);
  if (slots < 1) {
    const RecurrentSlotLayout layout(spec);
    FK_FAIL(FK_ERR_OUT_OF_MEMORY, "a budget of ", budget_bytes, " bytes holds no recurrent state slot of group '",
            spec.group, "': one slot takes ", layout.slot_bytes(), " bytes (", layout.num_layers(), " layers of ",
            spec.slot_bytes_per_layer, " bytes, aligned to ", RecurrentSlotLayout::kAlignment, ")");
  }
  return RecurrentSlotPool(spec, slots, device, stream);
}

void RecurrentSlotPool::check_slot(int32_t slot) const {
  FK_CHECK(slot >= 0 && slot < capacity_, "recurrent state slot ", slot, " is out of range [0, ", capacity_,
           ") in group '", layout_.group(), "'");
}

uint8_t* RecurrentSlotPool::slot_ptr(int32_t slot) const {
  check_slot(slot);
  return storage_.data_as<uint8_t>() + static_cast<int64_t>(slot) * bytes_per_slot();
}

int32_t RecurrentSlotPool::allocate(SequenceId seq, void* stream) {
  if (const auto it = slot_of_.find(seq); it != slot_of_.end())
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "sequence ", seq, " already holds recurrent state slot ", it->second,
            " of group '", layout_.group(), "'");
  if (free_.empty())
    FK_FAIL(FK_ERR_OUT_OF_MEMORY, "recurrent state pool of group '", layout_.group(), "' is full: all ", capacity_,
            " slots are held, none left for sequence ", seq);
  const int32_t slot = free_.back();
  rt::memset_async(slot_ptr(slot), 0, static_cast<size_t>(bytes_per_slot()), device(), stream);
  free_.pop_back();
  slot_of_.emplace(seq, slot);
  return slot;
}

int32_t RecurrentSlotPool::slot_of(SequenceId seq) const {
  const auto it = slot_of_.find(seq);
  if (it == slot_of_.end())
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "sequence ", seq, " holds no recurrent state slot of group '", layout_.group(),
            "'");
  return it->second;
}

void RecurrentSlotPool::free(SequenceId seq) {
  const int32_t slot = slot_of(seq);
  slot_of_.erase(seq);
  free_.push_back(slot);
}

void RecurrentSlotPool::copy(SequenceId src, SequenceId dst, void* stream) {
  const int32_t from = slot_of(src), to = slot_of(dst);
  if (from == to) return;
  rt::memcpy_async(slot_ptr(to), device(), slot_ptr(from), device(), static_cast<size_t>(bytes_per_slot()), stream);
}

void RecurrentSlotPool::fork(SequenceId src, SequenceId dst, void* stream) {
  FK_CHECK(src != dst, "fork of sequence ", src, " onto itself");
  slot_of(src);  // throws before dst gets a slot
  if (!holds(dst)) {
    if (free_.empty())
      FK_FAIL(FK_ERR_OUT_OF_MEMORY, "recurrent state pool of group '", layout_.group(), "' is full: all ", capacity_,
              " slots are held, none left for sequence ", dst, " forked from ", src);
    // No zeroing: the copy overwrites the whole slot.
    slot_of_.emplace(dst, free_.back());
    free_.pop_back();
  }
  copy(src, dst, stream);
}

void RecurrentSlotPool::zero(SequenceId seq, void* stream) {
  rt::memset_async(slot_ptr(slot_of(seq)), 0, static_cast<size_t>(bytes_per_slot()), device(), stream);
}

void RecurrentSlotPool::checkpoint(SequenceId seq, uint64_t block_hash, RecurrentCheckpointStore& store,
                                   void* stream) {
  FK_CHECK(store.bytes_per_entry() == bytes_per_slot() && store.device() == device(),
           "checkpoint store of ", store.bytes_per_entry(), "-byte entries does not belong to the recurrent state pool"
           " of group '", layout_.group(), "' (", bytes_per_slot(), "-byte slots)");
  const uint8_t* from = slot_ptr(slot_of(seq));
  rt::memcpy_async(store.entry_for_write(block_hash), device(), from, device(), static_cast<size_t>(bytes_per_slot()),
                   stream);
}

bool RecurrentSlotPool::restore(SequenceId seq, uint64_t block_hash, RecurrentCheckpointStore& store, void* stream) {
  FK_CHECK(store.bytes_per_entry() == bytes_per_slot() && store.device() == device(),
           "checkpoint store of ", store.bytes_per_entry(), "-byte entries does not belong to the recurrent state pool"
           " of group '", layout_.group(), "' (", bytes_per_slot(), "-byte slots)");
  uint8_t* to = slot_ptr(slot_of(seq));
  const void* from = store.find(block_hash);
  if (from == nullptr) return false;
  rt::memcpy_async(to, device(), from, device(), static_cast<size_t>(bytes_per_slot()), stream);
  return true;
}

TensorView RecurrentSlotPool::state(int32_t slot, int64_t layer, int64_t tensor) const {
  const int64_t offset = layout_.offset(layer, tensor);
  const StateTensor& t = layout_.tensors()[static_cast<size_t>(tensor)];
  return make_view(slot_ptr(slot) + offset, t.shape.data(), static_cast<int>(t.shape.size()), t.dtype, device());
}

TensorView RecurrentSlotPool::state(int32_t slot, int64_t layer, std::string_view tensor) const {
  return state(slot, layer, layout_.tensor_index(tensor));
}

TensorView RecurrentSlotPool::layer_state(int64_t layer, int64_t tensor) const {
  const int64_t offset = layout_.offset(layer, tensor);
  const StateTensor& t = layout_.tensors()[static_cast<size_t>(tensor)];
  std::vector<int64_t> shape{capacity_};
  shape.insert(shape.end(), t.shape.begin(), t.shape.end());
  TensorView v = make_view(slot_ptr(0) + offset, shape.data(), static_cast<int>(shape.size()), t.dtype, device());
  // Slots are kAlignment bytes apart, a multiple of every element size.
  v.strides[0] = bytes_per_slot() / static_cast<int64_t>(dtype_size(t.dtype));
  return v;
}

TensorView RecurrentSlotPool::slot_bytes(int32_t slot) const {
  const int64_t n = bytes_per_slot();
  return make_view(slot_ptr(slot), &n, 1, DType::u8, device());
}

}  // namespace fk::runtime
