// transpose_tokens' CUDA baseline against the CPU implementation (the oracle's copy, bit for
// bit), on what the generic GPU oracle test does not cover: Oasis-500m's production shapes
// (the bench workloads, with time and bandwidth printed), random shapes, every word width of
// the copy (16, 8, 4 and 2 bytes) picked by channel-slice views at different offsets,
// permuted and broadcast input views, a misaligned out, grids past the y and z limits, the
// bytes around out left untouched, and errors for tensors on the wrong device.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fk/element.h"
#include "fk/ops/dit.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::TransposeTokensArgs;

const OpDef& def() { return OpRegistry::global().def(TransposeTokensArgs::kName); }

TensorView view4(const Tensor& buffer, std::initializer_list<int64_t> shape, std::initializer_list<int64_t> strides,
                 int64_t offset = 0) {
  TensorView v = buffer.view();
  v.data = v.element_ptr(offset);
  v.rank = 4;
  int i = 0;
  for (int64_t s : shape) v.shape[i++] = s;
  i = 0;
  for (int64_t s : strides) v.strides[i++] = s;
  return v;
}

// The same view over `dev`, a device copy of the host buffer under `host_view`.
TensorView on(const Tensor& dev, const Tensor& host, const TensorView& host_view) {
  TensorView v = host_view;
  v.device = dev.device();
  v.data = static_cast<char*>(dev.data()) + (static_cast<const char*>(host_view.data) - static_cast<const char*>(host.data()));
  return v;
}

// Two buffers byte for byte (device ones copied back), naming the first difference.
void expect_same_bytes(const Tensor& actual, const Tensor& expected, const std::string& what) {
  const Tensor a = actual.device().is_cpu() ? actual : actual.to(Device::cpu());
  ASSERT_EQ(a.nbytes(), expected.nbytes()) << what;
  const auto* pa = static_cast<const unsigned char*>(a.data());
  const auto* pe = static_cast<const unsigned char*>(expected.data());
  for (size_t i = 0; i < a.nbytes(); ++i)
    if (pa[i] != pe[i]) {
      ADD_FAILURE() << what << ": byte " << i << " (element " << i / static_cast<size_t>(a.view().element_size())
                    << ") differs";
      return;
    }
}

// Runs the CPU and CUDA baselines on one workload of the definition; out must match bit for bit.
void check_workload(const Json& w, bool time_it) {
  SCOPED_TRACE(w.dump());
  const OpCase host = def().make_case(w, test::seed_for("transpose_tokens_gpu" + w.dump()));
  OpCase dev = host;
  for (Tensor& t : dev.tensors) t = t.to(Device::cuda());
  dev.bind(def().tensor_args);
  bench::poison_outputs(def(), dev);
  ASSERT_EQ(test::call_baseline(DeviceType::cpu, host.as<TransposeTokensArgs>()), FK_OK) << last_error_message();
  ASSERT_EQ(test::call_baseline(DeviceType::cuda, dev.as<TransposeTokensArgs>()), FK_OK) << last_error_message();
  rt::device_synchronize();
  expect_same_bytes(dev.tensors[0], host.tensors[0], "out");
  expect_same_bytes(dev.tensors[1], host.tensors[1], "input (read only)");
  if (time_it) test::report_time(def(), dev);
}

TEST(TransposeTokensGpu, OasisBenchShapesMatchCpu) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().bench_workloads) check_workload(w, true);
}

TEST(TransposeTokensGpu, TestAndRandomShapesMatchCpu) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().test_workloads) check_workload(w, false);
  std::mt19937_64 rng(test::seed_for("transpose_tokens_gpu_random"));
  const char* dtypes[] = {"bf16", "f16", "f32"};
  for (int i = 0; i < 24; ++i) {
    auto pick = [&](int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1)); };
    const int64_t c = i % 3 == 0 ? pick(1, 9) : 8 * pick(1, 200) + (i % 3 == 1 ? 0 : pick(1, 7));
    check_workload({{"batch", pick(1, 3)}, {"x", pick(1, 40)}, {"y", pick(1, 40)}, {"channels", c},
                    {"dtype", dtypes[(i / 3) % 3]}},
                   false);
  }
}

// Past the grid's y and z limits (65535): the kernel strides over positions and samples.
TEST(TransposeTokensGpu, GridStridesPastItsLimits) {
  FK_REQUIRE_GPU();
  check_workload({{"batch", 1}, {"x", 3}, {"y", 70001}, {"channels", 2}, {"dtype", "f32"}}, false);
  check_workload({{"batch", 66000}, {"x", 2}, {"y", 1}, {"channels", 8}}, false);
}

// Input views of a packed buffer at element offsets that give each word width, permuted and
// broadcast views, and an out that starts one element past an aligned address.
TEST(TransposeTokensGpu, StridedViewsAndEveryWordWidth) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("transpose_tokens_gpu_views");
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    const int64_t es = static_cast<int64_t>(dtype_size(dt));
    // Channel slices of a [B, X, Y, W] buffer: W and the offset (in elements) set which
    // word divides the row, the strides and the start.
    struct Slice {
      int64_t width, offset, channels;
    };
    const Slice slices[] = {{3 * 64, 64, 64},  // a k slice of qkv: 16-byte words
                            {3 * 64, 4, 64},   // 16-bit: 8 bytes in, 8-byte words (f32: 16)
                            {3 * 64, 2, 64},   // 16-bit: 4-byte words (f32: 8)
                            {3 * 64, 1, 64},   // one element in: element words
                            {41, 3, 37},       // odd everything
                            {1024 + 8, 8, 1024}};
    for (const Slice& s : slices) {
      const std::string what = std::string(dtype_name(dt)) + " width " + std::to_string(s.width) + " offset " +
                               std::to_string(s.offset) + " channels " + std::to_string(s.channels);
      SCOPED_TRACE(what);
      const int64_t B = 2, X = 5, Y = 7;
      const Tensor buf = ops::random_tensor({B, X, Y, s.width}, dt, seed, static_cast<uint64_t>(s.offset));
      const Tensor buf_dev = buf.to(Device::cuda());
      const TensorView in = view4(buf, {B, X, Y, s.channels}, {X * Y * s.width, Y * s.width, s.width, 1}, s.offset);
      Tensor out = Tensor::empty({B, Y, X, s.channels}, dt);
      // Out one element into a buffer with a guard element either side: misaligned when the
      // dtype is narrower than a word, and its neighbours must stay as they were.
      const Tensor out_buf = ops::random_tensor({B * Y * X * s.channels + 2}, dt, seed, 99);
      Tensor out_buf_dev = out_buf.to(Device::cuda());
      const TensorView out_view = view4(out_buf, {B, Y, X, s.channels},
                                        {Y * X * s.channels, X * s.channels, s.channels, 1}, 1);
      test::expect_ok(DeviceType::cpu, TransposeTokensArgs{out, in});
      Tensor out_dev = Tensor::empty({B, Y, X, s.channels}, dt, Device::cuda());
      test::expect_ok(DeviceType::cuda, TransposeTokensArgs{out_dev, on(buf_dev, buf, in)});
      test::expect_ok(DeviceType::cuda, TransposeTokensArgs{on(out_buf_dev, out_buf, out_view), on(buf_dev, buf, in)});
      rt::device_synchronize();
      expect_same_bytes(out_dev, out, "aligned out");
      Tensor want = out_buf.clone();
      std::memcpy(static_cast<char*>(want.data()) + es, out.data(), out.nbytes());
      expect_same_bytes(out_buf_dev, want, "misaligned out and its guards");
      expect_same_bytes(buf_dev, buf, "input (read only)");
    }
    // Permuted: input [B, X, Y, C] read from a position-major buffer gives that buffer back.
    const int64_t B = 1, X = 4, Y = 9, C = 24;
    const Tensor pm = ops::random_tensor({B, Y, X, C}, dt, seed, 200);
    const Tensor pm_dev = pm.to(Device::cuda());
    const TensorView frame_major = view4(pm, {B, X, Y, C}, {Y * X * C, C, X * C, 1});
    Tensor back = Tensor::empty({B, Y, X, C}, dt, Device::cuda());
    test::expect_ok(DeviceType::cuda, TransposeTokensArgs{back, on(pm_dev, pm, frame_major)});
    rt::device_synchronize();
    expect_same_bytes(back, pm, std::string(dtype_name(dt)) + " permuted view");
    // Broadcast: one frame read X times (frame stride 0).
    const Tensor frame = ops::random_tensor({B, 1, Y, C}, dt, seed, 201);
    const Tensor frame_dev = frame.to(Device::cuda());
    const TensorView bc = view4(frame, {B, X, Y, C}, {Y * C, 0, C, 1});
    Tensor rep = Tensor::empty({B, Y, X, C}, dt), rep_dev = Tensor::empty({B, Y, X, C}, dt, Device::cuda());
    test::expect_ok(DeviceType::cpu, TransposeTokensArgs{rep, bc});
    test::expect_ok(DeviceType::cuda, TransposeTokensArgs{rep_dev, on(frame_dev, frame, bc)});
    rt::device_synchronize();
    expect_same_bytes(rep_dev, rep, std::string(dtype_name(dt)) + " broadcast frame");
  }
}

TEST(TransposeTokensGpu, NamedErrors) {
  FK_REQUIRE_GPU();
  const Tensor in = Tensor::empty({1, 2, 3, 4}, DType::bf16, Device::cuda());
  Tensor out = Tensor::empty({1, 3, 2, 4}, DType::bf16, Device::cuda());
  const Tensor host_in = Tensor::empty({1, 2, 3, 4}, DType::bf16);
  Tensor host_out = Tensor::empty({1, 3, 2, 4}, DType::bf16);
  test::expect_invalid(DeviceType::cuda, TransposeTokensArgs{out, host_in}, "input must be on cuda");
  test::expect_invalid(DeviceType::cuda, TransposeTokensArgs{host_out, in}, "out must be on cuda");
  // f64 is the CPU oracle's output dtype only.
  Tensor out64 = Tensor::empty({1, 3, 2, 4}, DType::f64, Device::cuda());
  test::expect_invalid(DeviceType::cuda, TransposeTokensArgs{out64, in}, "out must be bf16");
}

}  // namespace
}  // namespace fk
