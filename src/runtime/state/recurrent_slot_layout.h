// Where a sequence's recurrent state sits inside its slot: for each layer of the group, in
// the group's layer order, each state tensor of the layer in the spec's order. Every tensor
// starts on a kAlignment boundary and slots are a multiple of it apart, as separate device
// allocations would be, so kernels written for separately allocated state (vectorised or
// TMA loads) work on slot views unchanged.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/state/state_spec.h"

namespace fk::runtime {

class RecurrentSlotLayout {
 public:
  static constexpr int64_t kAlignment = 256;

  // Throws fk::Error naming the group when the spec is not a usable recurrent_slot group:
  // another kind, no layers, a layer listed twice, zero bytes per layer, or state tensors
  // whose bytes do not add up to slot_bytes_per_layer.
  explicit RecurrentSlotLayout(const StateSpec& spec);

  const std::string& group() const { return group_; }
  int64_t num_layers() const { return static_cast<int64_t>(layers_.size()); }
  // The model's layer indices, in group order.
  const std::vector<int64_t>& layers() const { return layers_; }
  // The state tensors of each layer: the spec's, or one u8 tensor of slot_bytes_per_layer.
  const std::vector<StateTensor>& tensors() const { return tensors_; }
  // Bytes between consecutive slots (the state's own bytes plus alignment padding).
  int64_t slot_bytes() const { return slot_bytes_; }
  // The bytes of state proper, without padding (StateSpec::slot_bytes()).
  int64_t state_bytes() const { return state_bytes_; }

  // The position in the group of the model's layer `layer`; throws if the group lacks it.
  int64_t layer_position(int64_t layer) const;
  // The index of the state tensor called `name`; throws naming the tensors there are.
  int64_t tensor_index(std::string_view name) const;
  // Byte offset, from the slot's start, of tensor `tensor` of the model's layer `layer`.
  int64_t offset(int64_t layer, int64_t tensor) const;

 private:
  std::string group_;
  std::vector<int64_t> layers_;
  std::vector<StateTensor> tensors_;
  std::vector<int64_t> tensor_offsets_;  // within one layer's part of a slot
  int64_t layer_stride_ = 0;             // bytes of one layer's part, padded
  int64_t slot_bytes_ = 0;
  int64_t state_bytes_ = 0;
};

}  // namespace fk::runtime
