// The row-strided check on the device: padded views keep their geometry and values through
// the copy, and the check fails CUDA implementations that read with the packed row stride
// or write past a row's end.
#include <gtest/gtest.h>

#include <string>

#include "harness/check/op_check.h"
#include "harness/check/op_check_strided.h"
#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/norm.h"
#include "fk/runtime.h"
#include "support/test_seed.h"

namespace fk::bench {
namespace {

using ops::RmsNormArgs;

const Json kWorkload = {{"tokens", 5}, {"hidden", 1000}};  // bf16: 2000-byte rows

fk_status call_cuda_baseline(const RmsNormArgs& a, void* stream) {
  return OpRegistry::global().baseline("rms_norm", DeviceType::cuda)(&a, stream);
}

fk_status rms_norm_ignoring_input_stride(const void* args, void* stream) {
  RmsNormArgs a = *static_cast<const RmsNormArgs*>(args);
  a.input.strides[0] = a.input.shape[1];
  return call_cuda_baseline(a, stream);
}

// Zeroes the element just past the end of the last row, where the row stride leaves room.
fk_status rms_norm_writing_past_row_end(const void* args, void* stream) {
  const auto& a = *static_cast<const RmsNormArgs*>(args);
  const fk_status s = call_cuda_baseline(a, stream);
  const int64_t T = a.out.shape[0], H = a.out.shape[1];
  if (s == FK_OK && T > 0 && a.out.strides[0] > H)
    rt::memset_async(a.out.element_ptr((T - 1) * a.out.strides[0] + H), 0, static_cast<size_t>(a.out.element_size()),
                     a.out.device, stream);
  return s;
}

bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

TEST(OpCheckStridedGpu, PaddedViewsSurviveTheCopy) {
  FK_REQUIRE_GPU();
  Tensor t = Tensor::empty({4, 3}, DType::f16);
  for (int64_t i = 0; i < t.numel(); ++i) store_element(t.view().element_ptr(i), t.dtype(), static_cast<double>(i));
  for (RowLayout layout : {RowLayout::aligned, RowLayout::odd_stride, RowLayout::odd_start}) {
    SCOPED_TRACE(std::string(row_layout_name(layout)));
    const RowStridedTensor host = make_row_strided(t, layout);
    const RowStridedTensor dev = row_strided_to(host, Device::cuda());
    EXPECT_TRUE(dev.view.device.is_cuda());
    EXPECT_EQ(dev.view.strides[0], host.view.strides[0]);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(dev.view.data) % 16, reinterpret_cast<uintptr_t>(host.view.data) % 16);
    EXPECT_EQ(fingerprint(contiguous_copy(dev)), fingerprint(t));
    EXPECT_EQ(padding_damage(dev), "");
    rt::memset_async(dev.view.element_ptr(2 * dev.view.strides[0] + 3), 0, 2, dev.view.device, nullptr);
    rt::device_synchronize();
    EXPECT_TRUE(contains(padding_damage(dev), "2 bytes of row padding were written (first: byte 0 past the end of row 2"))
        << padding_damage(dev);
  }
}

TEST(OpCheckStridedGpu, BaselinePasses) {
  FK_REQUIRE_GPU();
  const OpDef& def = OpRegistry::global().def("rms_norm");
  const CheckResult r = check_op_strided(def, kWorkload, test::seed_for("strided_gpu_baseline"), DeviceType::cuda);
  EXPECT_TRUE(r.passed) << r.message;
}

TEST(OpCheckStridedGpu, ReadingWithThePackedStrideFailsNamingTheInput) {
  FK_REQUIRE_GPU();
  const OpDef& def = OpRegistry::global().def("rms_norm");
  const uint64_t seed = test::seed_for("strided_gpu_input");
  EXPECT_TRUE(check_op(def, kWorkload, seed, DeviceType::cuda, rms_norm_ignoring_input_stride).passed);
  const CheckResult r = check_op_strided(def, kWorkload, seed, DeviceType::cuda, rms_norm_ignoring_input_stride);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(contains(r.message, "fails with only 'input' row-strided")) << r.message;
}

TEST(OpCheckStridedGpu, WritingPastARowsEndFailsNamingTheOutput) {
  FK_REQUIRE_GPU();
  const OpDef& def = OpRegistry::global().def("rms_norm");
  const uint64_t seed = test::seed_for("strided_gpu_output");
  EXPECT_TRUE(check_op(def, kWorkload, seed, DeviceType::cuda, rms_norm_writing_past_row_end).passed);
  const CheckResult r = check_op_strided(def, kWorkload, seed, DeviceType::cuda, rms_norm_writing_past_row_end);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(contains(r.message, "output 'out': 2 bytes of row padding were written (first: byte 0 past the end of row 4"))
      << r.message;
  EXPECT_TRUE(contains(r.message, "fails with only 'out' row-strided")) << r.message;
}

}  // namespace
}  // namespace fk::bench
