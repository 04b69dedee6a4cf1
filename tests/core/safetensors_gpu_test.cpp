// Loading safetensors tensors onto a CUDA device.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/safetensors/safetensors.h"
#include "support/test_seed.h"

namespace fk::safetensors {
namespace {

TEST(SafetensorsGpu, UploadToDeviceAndBack) {
  FK_REQUIRE_GPU();
  std::vector<uint16_t> w(3 * 1001);  // rows not a multiple of any vector width
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint16_t>(i * 2654435761u);
  const File f = File::from_bytes(
      serialize({{"w", make_view(w.data(), {3, 1001}, DType::bf16, Device::cpu())},
                 {"empty", make_view(nullptr, {0, 4}, DType::f32, Device::cpu())}}),
      "gpu");
  const Tensor d = f.upload("w", Device::cuda(0));
  EXPECT_TRUE(d.device().is_cuda());
  EXPECT_EQ(d.shape(), f.info("w").shape);
  const Tensor back = d.to(Device::cpu());
  EXPECT_EQ(std::memcmp(back.data(), f.bytes("w").data(), back.nbytes()), 0);
  EXPECT_EQ(f.upload("empty", Device::cuda(0)).numel(), 0);
  // The writer copies device tensors down.
  const File again = File::from_bytes(serialize({{"w", d.view()}}), "gpu again");
  EXPECT_EQ(again.checksum("w"), f.checksum("w"));
}

}  // namespace
}  // namespace fk::safetensors
