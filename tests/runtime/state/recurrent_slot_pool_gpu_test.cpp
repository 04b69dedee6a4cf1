// Recurrent state slots in device memory: a fresh slot is zeroed, fork and checkpoint /
// restore copy a slot's bytes on the device (issued on a stream), and later writes to one
// slot leave the other unchanged. Skips without a CUDA device.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "fk/runtime.h"
#include "runtime/device.h"
#include "runtime/state/recurrent_checkpoint_store.h"
#include "runtime/state/recurrent_slot_pool.h"
#include "support/test_seed.h"

namespace fk::runtime {
namespace {

StateSpec ssm_spec() {
  StateSpec s;
  s.group = "mamba";
  s.kind = StateKind::recurrent_slot;
  s.layers = {0, 1, 2};
  s.slot_tensors = {{"conv", {64, 3}, DType::bf16}, {"ssm", {8, 16, 32}, DType::f32}};
  s.slot_bytes_per_layer = 64 * 3 * 2 + 8 * 16 * 32 * 4;
  return s;
}

std::vector<uint8_t> download(const RecurrentSlotPool& pool, int32_t slot, void* stream) {
  rt::stream_synchronize(stream);
  std::vector<uint8_t> out(static_cast<size_t>(pool.bytes_per_slot()));
  rt::memcpy_sync(out.data(), Device::cpu(), pool.slot_bytes(slot).data, pool.device(), out.size());
  return out;
}

void upload(const RecurrentSlotPool& pool, int32_t slot, uint8_t seed, void* stream) {
  rt::stream_synchronize(stream);
  std::vector<uint8_t> in(static_cast<size_t>(pool.bytes_per_slot()));
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(seed + i * 13);
  rt::memcpy_sync(pool.slot_bytes(slot).data, pool.device(), in.data(), Device::cpu(), in.size());
  // A copy from pageable host memory may return before its DMA lands, and the pool's copies
  // run on a non-blocking stream that does not wait for it: finish it here.
  rt::device_synchronize(pool.device().index);
}

TEST(RecurrentSlotPoolGpu, ForkAndCheckpointCopyOnTheDevice) {
  FK_REQUIRE_GPU();
  engine::EngineStream stream(true);
  RecurrentSlotPool pool(ssm_spec(), 4, Device::cuda(0), stream.get());
  EXPECT_TRUE(pool.state(0, 2, "ssm").device.is_cuda());

  const int32_t src = pool.allocate(1, stream.get());
  upload(pool, src, 7, stream.get());
  const std::vector<uint8_t> original = download(pool, src, stream.get());

  pool.fork(1, 2, stream.get());
  const int32_t dst = pool.slot_of(2);
  EXPECT_EQ(download(pool, dst, stream.get()), original);
  upload(pool, src, 99, stream.get());
  EXPECT_EQ(download(pool, dst, stream.get()), original);  // no aliasing

  RecurrentCheckpointStore store(pool, 2, stream.get());
  pool.checkpoint(2, 0xfeedull, store, stream.get());
  upload(pool, dst, 3, stream.get());
  ASSERT_TRUE(pool.restore(2, 0xfeedull, store, stream.get()));
  EXPECT_EQ(download(pool, dst, stream.get()), original);

  // A slot given back and taken again starts from zeros.
  pool.free(1);
  const int32_t again = pool.allocate(3, stream.get());
  EXPECT_EQ(again, src);
  for (uint8_t b : download(pool, again, stream.get())) ASSERT_EQ(b, 0);
}

}  // namespace
}  // namespace fk::runtime
