// linear on the GPU (cuBLASLt baseline): decode shapes, strided rows, the algorithm cache
// path and the fp8 shape limits, against the f64 oracle.
#include <gtest/gtest.h>

#include <cstring>

#include "harness/check/op_check.h"
#include "fk/op_registry.h"
#include "fk/ops/linear.h"
#include "fk/runtime.h"
#include "ops/common/case_builder.h"
#include "ops/linear/linear_tolerance.h"
#include "support/test_seed.h"

namespace fk::ops {
namespace {

const OpDef& linear_def() { return OpRegistry::global().def("linear"); }

TEST(LinearGpu, DecodeAndLayerShapesMatchOracle) {
  FK_REQUIRE_GPU();
  const Json workloads[] = {
      {{"m", 1}, {"n", 1024}, {"k", 4096}},
      {{"m", 2}, {"n", 1024}, {"k", 4096}, {"bias", true}},
      {{"m", 5}, {"n", 1000}, {"k", 4096}},
      {{"m", 8}, {"n", 6144}, {"k", 512}, {"bias", true}},
      {{"m", 1}, {"n", 1024}, {"k", 4096}, {"dtype", "f8e4m3fn"}},
      {{"m", 7}, {"n", 1024}, {"k", 4096}, {"dtype", "f8e4m3fn"}, {"bias", true}},
      {{"m", 64}, {"n", 512}, {"k", 1024}, {"dtype", "f16"}},
      // The decode kernel's K slices (narrow weights, 1-2 rows): 8 slices of an uneven
      // 513-chunk K with a part-filled last row group; 2 slices of 125 chunks and an odd N;
      // a router-like 128 x 2048 with bias; 2 slices of a 64-chunk K (the smallest split);
      // 4 rows take no slices, nor do 2 rows of a wide weight (two weight rows per warp,
      // here with an odd N: the last warp's second row is past N); 4 rows of a wide weight
      // take three weight rows per warp (N = 4301: the last warp's third row is past N).
      {{"m", 1}, {"n", 45}, {"k", 4104}},
      {{"m", 2}, {"n", 4301}, {"k", 1032}, {"bias", true}},
      {{"m", 2}, {"n", 37}, {"k", 1000}, {"dtype", "f16"}},
      {{"m", 2}, {"n", 128}, {"k", 2048}, {"bias", true}},
      {{"m", 2}, {"n", 2048}, {"k", 512}},
      {{"m", 4}, {"n", 128}, {"k", 2048}, {"bias", true}},
      {{"m", 4}, {"n", 4301}, {"k", 1032}, {"bias", true}},
  };
  for (const Json& w : workloads) {
    const auto r = bench::check_op(linear_def(), w, test::seed_for("LinearGpuDecode" + w.dump()), DeviceType::cuda);
    EXPECT_TRUE(r.passed) << w.dump() << ": " << r.message;
  }
}

// The input is a column slice of a wider device buffer (row stride 96, K = 64).
TEST(LinearGpu, StridedInputRowsMatchOracle) {
  FK_REQUIRE_GPU();
  const int64_t M = 33, N = 80, K = 64, ld = 96, col = 16;
  const uint64_t seed = test::seed_for("LinearGpuStrided");
  Tensor wide = random_tensor({M, ld}, DType::bf16, seed, 1);
  Tensor weight = random_tensor({N, K}, DType::bf16, seed, 2);
  Tensor in_host = Tensor::empty({M, K}, DType::bf16);
  for (int64_t m = 0; m < M; ++m)
    std::memcpy(in_host.view().element_ptr(m * K), wide.view().element_ptr(m * ld + col), K * 2);
  Tensor oracle = Tensor::empty({M, N}, DType::f64);
  call_op(LinearArgs{oracle, in_host, weight, {}, {}, {}}, DeviceType::cpu, nullptr);

  Tensor wide_d = wide.to(Device::cuda(0)), weight_d = weight.to(Device::cuda(0));
  Tensor out_d = Tensor::empty({M, N}, DType::bf16, Device::cuda(0));
  TensorView slice = wide_d.view();
  slice.data = wide_d.view().element_ptr(col);
  slice.shape[1] = K;
  call_op(LinearArgs{out_d, slice, weight_d, {}, {}, {}}, DeviceType::cuda, nullptr);
  rt::device_synchronize();
  const Tolerance tol = linear_tolerance(LinearArgs{{}, in_host, weight, {}, {}, {}}, DType::bf16);
  const auto e = bench::compare_output("out", out_d, oracle, tol);
  EXPECT_EQ(e.num_bad, 0) << "worst at " << e.worst_index << ": " << e.worst_value << " vs " << e.worst_ref;
}

// The second call of a shape takes the cached algorithm; results are bit-identical.
TEST(LinearGpu, RepeatedCallsAreBitIdentical) {
  FK_REQUIRE_GPU();
  const OpCase host = linear_def().make_case({{"m", 17}, {"n", 256}, {"k", 512}, {"bias", true}}, 3);
  OpCase dev = bench::case_to_device(linear_def(), host, Device::cuda(0));
  const OpCase other = bench::case_to_device(
      linear_def(), linear_def().make_case({{"m", 18}, {"n", 256}, {"k", 512}, {"bias", true}}, 4), Device::cuda(0));
  call_op(dev.as<LinearArgs>(), DeviceType::cuda, nullptr);
  const Tensor first = dev.tensors[0].to(Device::cpu());
  call_op(other.as<LinearArgs>(), DeviceType::cuda, nullptr);
  call_op(dev.as<LinearArgs>(), DeviceType::cuda, nullptr);
  const Tensor second = dev.tensors[0].to(Device::cpu());
  EXPECT_EQ(std::memcmp(first.data(), second.data(), first.nbytes()), 0);
}

// The decode kernel's slice sums are added in a fixed order: repeated calls of a sliced
// shape are bit-identical too.
TEST(LinearGpu, SlicedDecodeCallsAreBitIdentical) {
  FK_REQUIRE_GPU();
  for (const int64_t m : {1, 2}) {
    OpCase dev = bench::case_to_device(linear_def(), linear_def().make_case({{"m", m}, {"n", 96}, {"k", 4096}}, 7),
                                       Device::cuda(0));
    call_op(dev.as<LinearArgs>(), DeviceType::cuda, nullptr);
    const Tensor first = dev.tensors[0].to(Device::cpu());
    for (int i = 0; i < 3; ++i) {
      call_op(dev.as<LinearArgs>(), DeviceType::cuda, nullptr);
      const Tensor again = dev.tensors[0].to(Device::cpu());
      EXPECT_EQ(std::memcmp(first.data(), again.data(), first.nbytes()), 0) << "m " << m << " call " << i;
    }
  }
}

TEST(LinearGpu, Fp8ShapesCuBlasLtCannotRunAreClearErrors) {
  FK_REQUIRE_GPU();
  const OpCase host = linear_def().make_case({{"m", 4}, {"n", 64}, {"k", 24}, {"dtype", "f8e4m3fn"}}, 5);
  const OpCase dev = bench::case_to_device(linear_def(), host, Device::cuda(0));
  const fk_status s = OpRegistry::global().baseline("linear", DeviceType::cuda)(dev.args_ptr(), nullptr);
  EXPECT_EQ(s, FK_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(last_error_message()).find("K and N multiples of 16"), std::string::npos)
      << last_error_message();
}

TEST(LinearGpu, HostTensorsAreRejected) {
  FK_REQUIRE_GPU();
  const OpCase host = linear_def().make_case({{"m", 4}, {"n", 64}, {"k", 64}}, 6);
  const fk_status s = OpRegistry::global().baseline("linear", DeviceType::cuda)(host.args_ptr(), nullptr);
  EXPECT_EQ(s, FK_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(last_error_message()).find("must be on cuda"), std::string::npos) << last_error_message();
}

}  // namespace
}  // namespace fk::ops
