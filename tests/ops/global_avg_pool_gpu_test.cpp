// global_avg_pool's CUDA baseline against the CPU implementation: MobileNetV4's head shapes
// (the bench workloads, with time and bandwidth printed), every test workload, a channel
// slice input, and errors for tensors on the wrong device. The CUDA sum runs in f32 in pixel
// order and the CPU's in double, so the two agree to the dtype's rounding plus f32
// accumulation over at most a few thousand pixels.
#include <gtest/gtest.h>

#include <string>

#include "fk/element.h"
#include "fk/ops/conv.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::GlobalAvgPoolArgs;

const OpDef& def() { return OpRegistry::global().def(GlobalAvgPoolArgs::kName); }

void check_workload(const Json& w, bool time_it) {
  SCOPED_TRACE(w.dump());
  OpCase host = def().make_case(w, test::seed_for("global_avg_pool_gpu" + w.dump()));
  OpCase dev = host;
  for (Tensor& t : dev.tensors) t = t.to(Device::cuda());
  dev.bind(def().tensor_args);
  bench::poison_outputs(def(), dev);
  ASSERT_EQ(test::call_baseline(DeviceType::cpu, host.as<GlobalAvgPoolArgs>()), FK_OK) << last_error_message();
  ASSERT_EQ(test::call_baseline(DeviceType::cuda, dev.as<GlobalAvgPoolArgs>()), FK_OK) << last_error_message();
  rt::device_synchronize();
  const Tensor got = dev.tensors[0].to(Device::cpu());
  const DType dt = host.tensors[0].dtype();
  Tolerance tol = default_tolerance(dt);
  tol.atol += 1e-5;  // f32 accumulation of inputs of magnitude <= 4
  if (host.tensors[0].numel() > 0) test::expect_views_near(got.view(), host.tensors[0].view(), tol, "out");
  if (time_it) test::report_time(def(), dev);
}

TEST(GlobalAvgPoolGpu, MobileNetV4BenchShapesMatchCpu) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().bench_workloads) check_workload(w, true);
}

TEST(GlobalAvgPoolGpu, TestWorkloadsMatchCpu) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().test_workloads) check_workload(w, false);
}

TEST(GlobalAvgPoolGpu, ChannelSliceInput) {
  FK_REQUIRE_GPU();
  const Tensor wide = ops::random_tensor({3, 5, 4, 40}, DType::f16, test::seed_for("gap_gpu_slice"), 1, -1.f, 1.f);
  TensorView in = wide.view();
  in.data = in.element_ptr(7);
  in.shape[3] = 21;
  Tensor out = Tensor::empty({3, 21}, DType::f16);
  ASSERT_EQ(test::call_baseline(DeviceType::cpu, GlobalAvgPoolArgs{out, in}), FK_OK) << last_error_message();
  const Tensor dwide = wide.to(Device::cuda());
  TensorView din = in;
  din.device = dwide.device();
  din.data = static_cast<char*>(dwide.data()) + 7 * 2;
  Tensor dout = Tensor::empty({3, 21}, DType::f16, Device::cuda());
  ASSERT_EQ(test::call_baseline(DeviceType::cuda, GlobalAvgPoolArgs{dout, din}), FK_OK) << last_error_message();
  rt::device_synchronize();
  Tolerance tol = default_tolerance(DType::f16);
  tol.atol += 1e-5;
  test::expect_views_near(dout.to(Device::cpu()).view(), out.view(), tol, "slice");
}

TEST(GlobalAvgPoolGpu, NamedErrors) {
  FK_REQUIRE_GPU();
  const Tensor in = Tensor::empty({2, 3, 3, 4}, DType::f16);
  Tensor out = Tensor::empty({2, 4}, DType::f16, Device::cuda());
  test::expect_invalid(DeviceType::cuda, GlobalAvgPoolArgs{out, in}, "input must be on cuda");
}

}  // namespace
}  // namespace fk
