// add_layer_norm's CUDA baseline beside its CPU implementation: in place on the residual
// and apart, with and without bias, on each kernel path (short rows several to a block, one
// block per row in registers, the looped path for long or unaligned rows, which re-reads the
// stored sum for the variance); the residual is left alone when out is apart; the bench
// shapes against the oracle on sampled rows, with their time.
#include <gtest/gtest.h>

#include "fk/ops/norm.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::AddLayerNormArgs;

TEST(AddLayerNormGpu, InPlaceAndApartMatchTheCpu) {
  FK_REQUIRE_GPU();
  const uint64_t seed = test::seed_for("AddLayerNormGpu");
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    for (int64_t H : {64, 1024, 4096, 1000, 3, 40000, 40001}) {
      for (bool bias : {true, false}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " H=" + std::to_string(H) + (bias ? " bias" : ""));
        const int64_t T = 7;
        const Tensor in = ops::random_tensor({T, H}, dt, seed, 1, -1.f, 1.f);
        const Tensor res = ops::random_tensor({T, H}, dt, seed, 2, -1.f, 3.f);
        const Tensor w = ops::random_tensor({H}, dt, seed, 3, 0.5f, 1.5f);
        const Tensor b = bias ? ops::random_tensor({H}, dt, seed, 4, -0.5f, 0.5f) : Tensor();
        Tensor want = Tensor::empty({T, H}, dt);
        test::expect_ok(DeviceType::cpu, AddLayerNormArgs{want, in, res, w, bias ? b.view() : TensorView{}, 1e-5f});
        Tensor din = in.to(Device::cuda()), dres = res.to(Device::cuda()), dw = w.to(Device::cuda());
        Tensor db = bias ? b.to(Device::cuda()) : Tensor();
        Tensor dout = Tensor::empty({T, H}, dt, Device::cuda());
        const TensorView dbv = bias ? db.view() : TensorView{};
        test::expect_ok(DeviceType::cuda, AddLayerNormArgs{dout, din, dres, dw, dbv, 1e-5f});
        rt::device_synchronize();
        const Tolerance tol = default_tolerance(dt);
        test::expect_views_near(dout.to(Device::cpu()).view(), want.view(), tol, "apart");
        EXPECT_EQ(test::count_changed_bytes(dres.to(Device::cpu()), res), 0) << "the residual is read only";
        test::expect_ok(DeviceType::cuda, AddLayerNormArgs{dres, din, dres, dw, dbv, 1e-5f});
        rt::device_synchronize();
        test::expect_views_near(dres.to(Device::cpu()).view(), want.view(), tol, "in place");
      }
    }
  }
}

TEST(AddLayerNormGpu, BenchShapesAgainstOracleOnSampledRows) {
  FK_REQUIRE_GPU();
  const OpDef& def = OpRegistry::global().def(AddLayerNormArgs::kName);
  for (const Json& w : def.bench_workloads) {
    SCOPED_TRACE(w.dump());
    const int64_t T = ops::wl_int(w, "tokens"), H = ops::wl_int(w, "hidden");
    const DType dt = ops::wl_dtype(w);
    const uint64_t seed = test::seed_for("AddLayerNormGpu" + w.dump());
    OpCase c;
    c.workload = w;
    c.args.assign(def.args_size, std::byte{0});
    c.tensors = {Tensor::empty({T, H}, dt, Device::cuda()), test::device_uniform({T, H}, dt, seed, 1, -1.f, 1.f),
                 test::device_uniform({T, H}, dt, seed, 2, -1.f, 3.f), test::device_uniform({H}, dt, seed, 3, 0.5f, 1.5f),
                 test::device_uniform({H}, dt, seed, 4, -0.5f, 0.5f)};
    c.as<AddLayerNormArgs>().eps = static_cast<float>(ops::wl_float(w, "eps", 1e-5));
    c.bind(def.tensor_args);
    test::check_sampled_rows(def, c, {true, true, true, false, false}, test::sample_rows(T));
    test::report_time(def, c);
  }
}

}  // namespace
}  // namespace fk
