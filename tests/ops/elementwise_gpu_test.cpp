// add's CUDA baseline beside its CPU implementation: in place on `a` and apart, vector and
// scalar paths (widths that are and are not a multiple of the 16-byte vector), bit for bit
// (one fp32 add of two values of the dtype, rounded once, is the double sum rounded once);
// the bench shapes against the oracle on sampled rows, with their time.
#include <gtest/gtest.h>

#include "fk/ops/elementwise.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::AddArgs;

TEST(AddGpu, InPlaceAndApartEqualTheCpuBitForBit) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("AddGpu");
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    for (int64_t H : {1024, 1000, 3, 70000}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " H=" + std::to_string(H));
      const Tensor a = ops::random_tensor({5, H}, dt, seed, 1, -3.f, 3.f);
      const Tensor b = ops::random_tensor({5, H}, dt, seed, 2, -3.f, 3.f);
      Tensor want = Tensor::empty({5, H}, dt);
      test::expect_ok(DeviceType::cpu, AddArgs{want, a, b});
      Tensor da = a.to(Device::cuda()), db = b.to(Device::cuda()), dout = Tensor::empty({5, H}, dt, Device::cuda());
      test::expect_ok(DeviceType::cuda, AddArgs{dout, da, db});
      test::expect_ok(DeviceType::cuda, AddArgs{da, da, db});
      rt::device_synchronize();
      EXPECT_EQ(test::count_changed_bytes(dout.to(Device::cpu()), want), 0) << "apart";
      EXPECT_EQ(test::count_changed_bytes(da.to(Device::cpu()), want), 0) << "in place";
    }
  }
}

TEST(AddGpu, BenchShapesAgainstOracleOnSampledRows) {
  FK_REQUIRE_GPU();
  const OpDef& def = OpRegistry::global().def(AddArgs::kName);
  for (const Json& w : def.bench_workloads) {
    SCOPED_TRACE(w.dump());
    const int64_t T = ops::wl_int(w, "tokens"), H = ops::wl_int(w, "hidden");
    const DType dt = ops::wl_dtype(w);
    const uint64_t seed = test::seed_for("AddGpu" + w.dump());
    OpCase c;
    c.workload = w;
    c.args.assign(def.args_size, std::byte{0});
    c.tensors = {Tensor::empty({T, H}, dt, Device::cuda()), test::device_uniform({T, H}, dt, seed, 1, -2.f, 2.f),
                 test::device_uniform({T, H}, dt, seed, 2, -2.f, 2.f)};
    c.bind(def.tensor_args);
    test::check_sampled_rows(def, c, {true, true, true}, test::sample_rows(T));
    test::report_time(def, c);
  }
}

}  // namespace
}  // namespace fk
