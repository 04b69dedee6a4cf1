#include "runtime/state/recurrent_slot_layout.h"

#include <algorithm>
#include <limits>

#include "fk/status.h"
#include "fk/tensor_view.h"

namespace fk::runtime {

namespace {

constexpr int64_t kMaxSlotBytes = std::numeric_limits<int64_t>::max() / 4;

int64_t round_up(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

std::string tensor_names(const std::vector<StateTensor>& tensors) {
  std::string s;
  for (const StateTensor& t : tensors) s += (s.empty() ? "'" : ", '") + t.name + "'";
  return s;
}

}  // namespace

RecurrentSlotLayout::RecurrentSlotLayout(const StateSpec& spec) : group_(spec.group), layers_(spec.layers) {
  FK_CHECK(spec.kind == StateKind::recurrent_slot, "state group '", spec.group, "' is ",
           state_kind_name(spec.kind), ", not recurrent_slot: it has no recurrent slots");
  FK_CHECK(!layers_.empty(), "recurrent state group '", spec.group, "' lists no layers");
  std::vector<int64_t> sorted = layers_;
  std::sort(sorted.begin(), sorted.end());
  FK_CHECK(sorted.front() >= 0, "recurrent state group '", spec.group, "' lists layer ", sorted.front());
  const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
  FK_CHECK(twice == sorted.end(), "recurrent state group '", spec.group, "' lists layer ",
           twice == sorted.end() ? 0 : *twice, " twice");
  FK_CHECK(spec.slot_bytes_per_layer > 0, "recurrent state group '", spec.group, "' declares ",
           spec.slot_bytes_per_layer, " bytes of state per layer; a slot needs at least one");
  FK_CHECK(spec.slot_bytes_per_layer <= kMaxSlotBytes / num_layers() / 2, "recurrent state group '", spec.group,
           "': ", num_layers(), " layers of ", spec.slot_bytes_per_layer, " bytes overflow a byte count");

  tensors_ = spec.slot_tensors;
  if (tensors_.empty()) tensors_.push_back({"state", {spec.slot_bytes_per_layer}, DType::u8});
  int64_t sum = 0, offset = 0;
  for (const StateTensor& t : tensors_) {
    FK_CHECK(!t.name.empty(), "recurrent state group '", spec.group, "' has a state tensor without a name");
    FK_CHECK(std::count_if(tensors_.begin(), tensors_.end(), [&](const StateTensor& o) { return o.name == t.name; }) ==
                 1,
             "recurrent state group '", spec.group, "' names two state tensors '", t.name, "'");
    FK_CHECK(!t.shape.empty() && t.shape.size() <= static_cast<size_t>(kMaxRank - 1), "state tensor '", t.name,
             "' of group '", spec.group, "' has rank ", t.shape.size(), "; it must be in [1, ", kMaxRank - 1, "]");
    FK_CHECK(dtype_is_valid(t.dtype), "state tensor '", t.name, "' of group '", spec.group, "' has an invalid dtype");
    // Multiplied with a bound at every step: a shape too big for the slot must not overflow.
    int64_t bytes = static_cast<int64_t>(dtype_size(t.dtype));
    for (int64_t d : t.shape) {
      FK_CHECK(d > 0, "state tensor '", t.name, "' of group '", spec.group, "' has dimension ", d);
      FK_CHECK(bytes <= (spec.slot_bytes_per_layer - sum) / d, "the state tensors of group '", spec.group, "' (",
               tensor_names(tensors_), ") take more than its ", spec.slot_bytes_per_layer, " bytes per layer");
      bytes *= d;
    }
    sum += bytes;
    tensor_offsets_.push_back(offset);
    offset += round_up(t.bytes(), kAlignment);
  }
  FK_CHECK(sum == spec.slot_bytes_per_layer, "the state tensors of group '", spec.group, "' (",
           tensor_names(tensors_), ") take ", sum, " bytes, but the group declares ", spec.slot_bytes_per_layer,
           " bytes per layer");
  layer_stride_ = offset;
  slot_bytes_ = layer_stride_ * num_layers();
  state_bytes_ = spec.slot_bytes();
}

int64_t RecurrentSlotLayout::layer_position(int64_t layer) const {
  const auto it = std::find(layers_.begin(), layers_.end(), layer);
  FK_CHECK(it != layers_.end(), "layer ", layer, " is not in recurrent state group '", group_, "'");
  return it - layers_.begin();
}

int64_t RecurrentSlotLayout::tensor_index(std::string_view name) const {
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].name == name) return static_cast<int64_t>(i);
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, "recurrent state group '", group_, "' has no state tensor '", name,
          "'; it has ", tensor_names(tensors_));
}

int64_t RecurrentSlotLayout::offset(int64_t layer, int64_t tensor) const {
  FK_CHECK(tensor >= 0 && tensor < static_cast<int64_t>(tensors_.size()), "state tensor index ", tensor,
           " is out of range [0, ", tensors_.size(), ") in group '", group_, "'");
  return layer_position(layer) * layer_stride_ + tensor_offsets_[static_cast<size_t>(tensor)];
}

}  // namespace fk::runtime
