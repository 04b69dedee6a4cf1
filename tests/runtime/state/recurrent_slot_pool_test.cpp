// Recurrent state slots (src/runtime/state/recurrent_slot_pool.h) on the CPU: allocation,
// reuse and the errors of exhaustion and misuse, zeroed fresh slots, fork copies that do not
// alias, checkpoint / restore through a RecurrentCheckpointStore (and its LRU eviction),
// sizing from a byte budget, and the shapes and places of the slot views.
#include "runtime/state/recurrent_slot_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fk/status.h"
#include "runtime/state/recurrent_checkpoint_store.h"

namespace fk::runtime {
namespace {

// Two layers (model layers 5 and 7) of Mamba-like state: a bf16 conv window and an f32
// recurrent state, 24 + 32 bytes a layer, each tensor padded to 256 bytes: 1024 bytes a slot.
StateSpec mamba_spec() {
  StateSpec s;
  s.group = "mamba";
  s.kind = StateKind::recurrent_slot;
  s.layers = {5, 7};
  s.slot_tensors = {{"conv", {4, 3}, DType::bf16}, {"ssm", {2, 4}, DType::f32}};
  s.slot_bytes_per_layer = 24 + 32;
  return s;
}
constexpr int64_t kMambaSlotBytes = 4 * RecurrentSlotLayout::kAlignment;

// Only a byte count: each layer's state is one u8 tensor.
StateSpec bytes_spec(int64_t bytes_per_layer, int64_t layers = 1) {
  StateSpec s;
  s.group = "linear_attention";
  s.kind = StateKind::recurrent_slot;
  for (int64_t l = 0; l < layers; ++l) s.layers.push_back(l);
  s.slot_bytes_per_layer = bytes_per_layer;
  return s;
}

template <class F>
std::string error_of(F&& f, fk_status* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  ADD_FAILURE() << "no fk::Error";
  return "";
}

std::vector<uint8_t> bytes_of(const RecurrentSlotPool& pool, int32_t slot) {
  const TensorView v = pool.slot_bytes(slot);
  const auto* p = static_cast<const uint8_t*>(v.data);
  return std::vector<uint8_t>(p, p + v.shape[0]);
}

void fill(const RecurrentSlotPool& pool, int32_t slot, uint8_t seed) {
  const TensorView v = pool.slot_bytes(slot);
  auto* p = static_cast<uint8_t*>(v.data);
  for (int64_t i = 0; i < v.shape[0]; ++i) p[i] = static_cast<uint8_t>(seed + i * 7);
}

bool all_zero(const std::vector<uint8_t>& b) {
  for (uint8_t x : b)
    if (x != 0) return false;
  return true;
}

TEST(RecurrentSlotPool, AllocatesFreesAndReusesSlots) {
  RecurrentSlotPool pool(mamba_spec(), 3, Device::cpu());
  EXPECT_EQ(pool.capacity(), 3);
  EXPECT_EQ(pool.num_free(), 3);
  EXPECT_EQ(pool.num_used(), 0);
  EXPECT_EQ(pool.bytes_per_slot(), kMambaSlotBytes);
  EXPECT_EQ(pool.bytes(), 3 * kMambaSlotBytes);

  const int32_t a = pool.allocate(10), b = pool.allocate(11), c = pool.allocate(12);
  EXPECT_NE(a, b);
  EXPECT_NE(b, c);
  EXPECT_NE(a, c);
  for (int32_t s : {a, b, c}) {
    EXPECT_GE(s, 0);
    EXPECT_LT(s, 3);
  }
  EXPECT_EQ(pool.slot_of(11), b);
  EXPECT_TRUE(pool.holds(12));
  EXPECT_EQ(pool.num_used(), 3);
  EXPECT_EQ(pool.num_free(), 0);

  pool.free(11);
  EXPECT_FALSE(pool.holds(11));
  EXPECT_EQ(pool.num_free(), 1);
  EXPECT_EQ(pool.allocate(13), b);  // the freed slot is the one left
  EXPECT_EQ(pool.num_used(), 3);
  pool.free(10);
  pool.free(12);
  pool.free(13);
  EXPECT_EQ(pool.num_free(), 3);
  const int32_t again = pool.allocate(11);  // a freed sequence id may come back
  EXPECT_EQ(pool.slot_of(11), again);
}

TEST(RecurrentSlotPool, ExhaustionAndMisuseAreNamedErrors) {
  RecurrentSlotPool pool(mamba_spec(), 2, Device::cpu());
  pool.allocate(1);
  pool.allocate(2);
  fk_status code = FK_OK;
  std::string msg = error_of([&] { pool.allocate(99); }, &code);
  EXPECT_EQ(code, FK_ERR_OUT_OF_MEMORY);
  EXPECT_NE(msg.find("all 2 slots are held"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sequence 99"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'mamba'"), std::string::npos) << msg;
  EXPECT_FALSE(pool.holds(99));

  msg = error_of([&] { pool.allocate(2); });
  EXPECT_NE(msg.find("sequence 2 already holds recurrent state slot"), std::string::npos) << msg;
  msg = error_of([&] { pool.free(42); });
  EXPECT_NE(msg.find("sequence 42 holds no recurrent state slot"), std::string::npos) << msg;
  msg = error_of([&] { pool.slot_of(43); });
  EXPECT_NE(msg.find("sequence 43"), std::string::npos) << msg;
  msg = error_of([&] { pool.fork(1, 3); });  // full: 3 gets no slot
  EXPECT_NE(msg.find("sequence 3 forked from 1"), std::string::npos) << msg;
  EXPECT_FALSE(pool.holds(3));
  pool.free(2);
  msg = error_of([&] { pool.fork(7, 3); });  // unknown source: 3 gets no slot either
  EXPECT_NE(msg.find("sequence 7"), std::string::npos) << msg;
  EXPECT_FALSE(pool.holds(3));
  EXPECT_EQ(pool.num_free(), 1);
  msg = error_of([&] { pool.state(5, 5); });
  EXPECT_NE(msg.find("slot 5 is out of range"), std::string::npos) << msg;
}

TEST(RecurrentSlotPool, BadSpecsAndSizesAreNamedErrors) {
  std::string msg = error_of([] { RecurrentSlotPool(bytes_spec(0), 4, Device::cpu()); });
  EXPECT_NE(msg.find("declares 0 bytes of state per layer"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'linear_attention'"), std::string::npos) << msg;

  StateSpec kv = bytes_spec(64);
  kv.kind = StateKind::paged_kv;
  msg = error_of([&] { RecurrentSlotPool(kv, 4, Device::cpu()); });
  EXPECT_NE(msg.find("is paged_kv, not recurrent_slot"), std::string::npos) << msg;

  StateSpec no_layers = bytes_spec(64, 0);
  msg = error_of([&] { RecurrentSlotPool(no_layers, 4, Device::cpu()); });
  EXPECT_NE(msg.find("lists no layers"), std::string::npos) << msg;

  StateSpec twice = bytes_spec(64, 2);
  twice.layers = {3, 3};
  msg = error_of([&] { RecurrentSlotPool(twice, 4, Device::cpu()); });
  EXPECT_NE(msg.find("lists layer 3 twice"), std::string::npos) << msg;

  StateSpec mismatch = mamba_spec();
  mismatch.slot_bytes_per_layer = 60;
  msg = error_of([&] { RecurrentSlotPool(mismatch, 4, Device::cpu()); });
  EXPECT_NE(msg.find("take 56 bytes, but the group declares 60"), std::string::npos) << msg;
  mismatch.slot_bytes_per_layer = 40;
  msg = error_of([&] { RecurrentSlotPool(mismatch, 4, Device::cpu()); });
  EXPECT_NE(msg.find("take more than its 40 bytes per layer"), std::string::npos) << msg;
  StateSpec huge = mamba_spec();
  huge.slot_tensors[1].shape = {int64_t{1} << 40, int64_t{1} << 40, 4};  // would overflow
  msg = error_of([&] { RecurrentSlotPool(huge, 4, Device::cpu()); });
  EXPECT_NE(msg.find("take more than its 56 bytes per layer"), std::string::npos) << msg;

  msg = error_of([] { RecurrentSlotPool(bytes_spec(64), 0, Device::cpu()); });
  EXPECT_NE(msg.find("slot count"), std::string::npos) << msg;
}

TEST(RecurrentSlotPool, FreshSlotsAreZeroed) {
  RecurrentSlotPool pool(mamba_spec(), 1, Device::cpu());
  const int32_t s = pool.allocate(1);
  EXPECT_TRUE(all_zero(bytes_of(pool, s)));
  fill(pool, s, 3);
  EXPECT_FALSE(all_zero(bytes_of(pool, s)));
  pool.free(1);
  EXPECT_EQ(pool.allocate(2), s);
  EXPECT_TRUE(all_zero(bytes_of(pool, s)));  // the last holder's state is gone
  fill(pool, s, 9);
  pool.zero(2);
  EXPECT_TRUE(all_zero(bytes_of(pool, s)));
}

TEST(RecurrentSlotPool, ForkCopiesTheStateAndLaterWritesDoNotAlias) {
  RecurrentSlotPool pool(mamba_spec(), 4, Device::cpu());
  const int32_t src = pool.allocate(1);
  fill(pool, src, 11);
  const std::vector<uint8_t> original = bytes_of(pool, src);

  pool.fork(1, 2);
  ASSERT_TRUE(pool.holds(2));
  const int32_t dst = pool.slot_of(2);
  EXPECT_NE(dst, src);
  EXPECT_EQ(bytes_of(pool, dst), original);
  EXPECT_EQ(pool.num_used(), 2);

  fill(pool, src, 50);  // the parent moves on
  EXPECT_EQ(bytes_of(pool, dst), original);
  fill(pool, dst, 90);  // and so does the child
  EXPECT_NE(bytes_of(pool, src), bytes_of(pool, dst));
  EXPECT_NE(bytes_of(pool, dst), original);

  // Forking onto a sequence that holds a slot overwrites its state, in the same slot.
  pool.fork(1, 2);
  EXPECT_EQ(pool.slot_of(2), dst);
  EXPECT_EQ(bytes_of(pool, dst), bytes_of(pool, src));
  pool.allocate(3);
  pool.copy(2, 3);
  EXPECT_EQ(bytes_of(pool, pool.slot_of(3)), bytes_of(pool, src));
  EXPECT_NE(error_of([&] { pool.fork(1, 1); }).find("onto itself"), std::string::npos);
}

TEST(RecurrentSlotPool, CheckpointAndRestoreRoundTrip) {
  RecurrentSlotPool pool(mamba_spec(), 2, Device::cpu());
  RecurrentCheckpointStore store(pool, 4);
  EXPECT_EQ(store.capacity(), 4);
  EXPECT_EQ(store.bytes_per_entry(), pool.bytes_per_slot());
  const uint64_t block_hash = 0x1234abcdull;

  const int32_t s = pool.allocate(1);
  fill(pool, s, 21);
  const std::vector<uint8_t> at_block = bytes_of(pool, s);
  pool.checkpoint(1, block_hash, store);
  EXPECT_TRUE(store.contains(block_hash));
  EXPECT_EQ(store.size(), 1);

  fill(pool, s, 77);  // the sequence goes on past the block
  ASSERT_TRUE(pool.restore(1, block_hash, store));
  EXPECT_EQ(bytes_of(pool, s), at_block);

  // Another sequence with the same prefix starts from the checkpoint.
  const int32_t t = pool.allocate(2);
  ASSERT_TRUE(pool.restore(2, block_hash, store));
  EXPECT_EQ(bytes_of(pool, t), at_block);

  // No checkpoint: false, state unchanged.
  fill(pool, t, 5);
  const std::vector<uint8_t> before = bytes_of(pool, t);
  EXPECT_FALSE(pool.restore(2, block_hash + 1, store));
  EXPECT_EQ(bytes_of(pool, t), before);

  // A checkpoint again under the same hash replaces the stored copy.
  pool.checkpoint(2, block_hash, store);
  EXPECT_EQ(store.size(), 1);
  ASSERT_TRUE(pool.restore(1, block_hash, store));
  EXPECT_EQ(bytes_of(pool, s), before);

  store.erase(block_hash);
  EXPECT_FALSE(store.contains(block_hash));
  EXPECT_FALSE(pool.restore(1, block_hash, store));
  EXPECT_NE(error_of([&] { pool.checkpoint(9, block_hash, store); }).find("sequence 9"), std::string::npos);

  RecurrentSlotPool other(bytes_spec(64), 1, Device::cpu());
  other.allocate(1);
  EXPECT_NE(error_of([&] { other.checkpoint(1, block_hash, store); }).find("does not belong"), std::string::npos);
}

TEST(RecurrentCheckpointStore, EvictsTheLeastRecentlyUsedCheckpoint) {
  RecurrentSlotPool pool(bytes_spec(16), 1, Device::cpu());
  RecurrentCheckpointStore store(pool, 2);
  const int32_t s = pool.allocate(1);
  fill(pool, s, 1);
  pool.checkpoint(1, 100, store);
  fill(pool, s, 2);
  pool.checkpoint(1, 200, store);
  ASSERT_TRUE(pool.restore(1, 100, store));  // 100 is now the most recently used
  const std::vector<uint8_t> state_100 = bytes_of(pool, s);
  fill(pool, s, 3);
  pool.checkpoint(1, 300, store);  // full: 200 goes
  EXPECT_EQ(store.evictions(), 1);
  EXPECT_TRUE(store.contains(100));
  EXPECT_FALSE(store.contains(200));
  EXPECT_TRUE(store.contains(300));
  ASSERT_TRUE(pool.restore(1, 100, store));
  EXPECT_EQ(bytes_of(pool, s), state_100);
  store.clear();
  EXPECT_EQ(store.size(), 0);
  EXPECT_NE(error_of([&] { RecurrentCheckpointStore(pool, 0); }).find("entry count"), std::string::npos);
}

TEST(RecurrentSlotPool, SizesFromAByteBudget) {
  const StateSpec spec = mamba_spec();
  EXPECT_EQ(RecurrentSlotPool::slots_in_budget(spec, 3 * kMambaSlotBytes + kMambaSlotBytes - 1), 3);
  EXPECT_EQ(RecurrentSlotPool::slots_in_budget(spec, kMambaSlotBytes - 1), 0);
  EXPECT_EQ(RecurrentSlotPool::slots_in_budget(spec, -5), 0);
  const RecurrentSlotPool pool = RecurrentSlotPool::from_budget(spec, 5 * kMambaSlotBytes + 100, Device::cpu());
  EXPECT_EQ(pool.capacity(), 5);
  EXPECT_LE(pool.bytes(), 5 * kMambaSlotBytes + 100);

  fk_status code = FK_OK;
  const std::string msg = error_of([&] { RecurrentSlotPool::from_budget(spec, 1000, Device::cpu()); }, &code);
  EXPECT_EQ(code, FK_ERR_OUT_OF_MEMORY);
  EXPECT_NE(msg.find("a budget of 1000 bytes holds no recurrent state slot"), std::string::npos) << msg;
  EXPECT_NE(msg.find("one slot takes 1024 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2 layers of 56 bytes"), std::string::npos) << msg;
  // A zero-byte spec is an error, not an endless number of slots.
  EXPECT_NE(error_of([] { RecurrentSlotPool::from_budget(bytes_spec(0), 1 << 20, Device::cpu()); })
                .find("declares 0 bytes"),
            std::string::npos);
}

TEST(RecurrentSlotPool, SlotViewsHaveTheDeclaredShapesAndPlaces) {
  RecurrentSlotPool pool(mamba_spec(), 3, Device::cpu());
  pool.allocate(1);
  const int32_t s = pool.allocate(2);
  const auto* slot_start = static_cast<const uint8_t*>(pool.slot_bytes(s).data);
  EXPECT_EQ(pool.slot_bytes(s).shape[0], kMambaSlotBytes);

  const TensorView conv = pool.state(s, 5, "conv");
  EXPECT_EQ(conv.rank, 2);
  EXPECT_EQ(conv.shape[0], 4);
  EXPECT_EQ(conv.shape[1], 3);
  EXPECT_EQ(conv.dtype, DType::bf16);
  EXPECT_TRUE(conv.is_contiguous());
  EXPECT_TRUE(conv.device.is_cpu());
  EXPECT_EQ(static_cast<const uint8_t*>(conv.data), slot_start);

  const TensorView ssm7 = pool.state(s, 7, "ssm");
  EXPECT_EQ(ssm7.rank, 2);
  EXPECT_EQ(ssm7.shape[0], 2);
  EXPECT_EQ(ssm7.shape[1], 4);
  EXPECT_EQ(ssm7.dtype, DType::f32);
  EXPECT_EQ(static_cast<const uint8_t*>(ssm7.data) - slot_start, 3 * RecurrentSlotLayout::kAlignment);
  EXPECT_EQ(pool.state(s, 7, 1).data, ssm7.data);

  // Every tensor of every layer starts aligned, and none overlaps another.
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int64_t layer : {5, 7})
    for (int64_t t = 0; t < 2; ++t) {
      const TensorView v = pool.state(s, layer, t);
      const int64_t off = static_cast<const uint8_t*>(v.data) - slot_start;
      EXPECT_EQ(off % RecurrentSlotLayout::kAlignment, 0);
      ranges.emplace_back(off, off + v.nbytes());
    }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) EXPECT_LE(ranges[i - 1].second, ranges[i].first);
  EXPECT_LE(ranges.back().second, kMambaSlotBytes);

  // Across slots: [capacity, 2, 4], slot i's rows where state(i, ...) is.
  const TensorView all = pool.layer_state(7, 1);
  EXPECT_EQ(all.rank, 3);
  EXPECT_EQ(all.shape[0], 3);
  EXPECT_EQ(all.shape[1], 2);
  EXPECT_EQ(all.shape[2], 4);
  EXPECT_EQ(all.strides[0], kMambaSlotBytes / 4);
  EXPECT_EQ(all.strides[1], 4);
  EXPECT_EQ(all.strides[2], 1);
  for (int32_t i = 0; i < 3; ++i) EXPECT_EQ(all.element_ptr(i * all.strides[0]), pool.state(i, 7, 1).data);

  // A view writes the slot it names and nothing else.
  static_cast<float*>(ssm7.data)[5] = 2.5f;
  const std::vector<uint8_t> other = bytes_of(pool, pool.slot_of(1));
  EXPECT_TRUE(all_zero(other));

  EXPECT_NE(error_of([&] { pool.state(s, 6); }).find("layer 6 is not in recurrent state group 'mamba'"),
            std::string::npos);
  const std::string msg = error_of([&] { pool.state(s, 5, "wkv"); });
  EXPECT_NE(msg.find("no state tensor 'wkv'; it has 'conv', 'ssm'"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { pool.state(s, 5, 2); }).find("out of range"), std::string::npos);

  // A spec without tensors: each layer's state is its bytes.
  RecurrentSlotPool raw(bytes_spec(100, 2), 1, Device::cpu());
  const TensorView b = raw.state(raw.allocate(1), 1);
  EXPECT_EQ(b.rank, 1);
  EXPECT_EQ(b.shape[0], 100);
  EXPECT_EQ(b.dtype, DType::u8);
  EXPECT_EQ(raw.layout().state_bytes(), 200);
  EXPECT_EQ(raw.bytes_per_slot(), 2 * RecurrentSlotLayout::kAlignment);
}

TEST(StateSpec, NamesItsKinds) {
  EXPECT_EQ(state_kind_name(StateKind::none), "none");
  EXPECT_EQ(state_kind_name(StateKind::paged_kv), "paged_kv");
  EXPECT_EQ(state_kind_name(StateKind::recurrent_slot), "recurrent_slot");
  EXPECT_EQ(state_kind_name(StateKind::cross_attention), "cross_attention");
  EXPECT_EQ(mamba_spec().slot_bytes(), 2 * 56);
  EXPECT_EQ(mamba_spec().slot_tensors[1].bytes(), 32);
}

}  // namespace
}  // namespace fk::runtime
