// The activation ops' CUDA baselines on what the generic GPU oracle test does not cover:
// the production (bench) shapes, checked against the oracle on a sample of rows with their
// time and bandwidth printed; row-strided and misaligned views (the scalar fallback)
// against the CPU implementation; extreme inputs.
#include <gtest/gtest.h>

#include <limits>

#include "fk/ops/activation.h"
#include "ops/activation/activation_defs.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using namespace ops;

const char* const kActivationOps[] = {"silu_and_mul", "gelu_and_mul", "gelu", "relu2", "logit_softcap"};

// The op's inputs for a workload, drawn on the device (same ranges as its make_case).
OpCase device_case(const OpDef& def, const Json& w, uint64_t seed) {
  const std::string& op = def.name;
  const int64_t T = wl_int(w, "tokens");
  OpCase c;
  c.workload = w;
  c.args.assign(def.args_size, std::byte{0});
  c.tensors.resize(def.tensor_args.size());
  if (op == "logit_softcap") {
    const DType dt = wl_dtype(w, "dtype", DType::f32);
    const float cap = static_cast<float>(wl_float(w, "cap", 30.0));
    c.tensors[0] = test::device_uniform({T, wl_int(w, "vocab")}, dt, seed, 1, -2 * cap, 2 * cap);
    c.bind(def.tensor_args);
    c.as<LogitSoftcapArgs>().cap = cap;
    return c;
  }
  const DType dt = wl_dtype(w);
  const bool gated = op == "silu_and_mul" || op == "gelu_and_mul";
  const int64_t cols = gated ? wl_int(w, "d") : wl_int(w, "hidden");
  c.tensors[0] = Tensor::empty({T, cols}, dt, Device::cuda());
  c.tensors[1] = test::device_uniform({T, gated ? 2 * cols : cols}, dt, seed, 1, op == "relu2" ? -4.f : -5.f,
                                      op == "relu2" ? 4.f : 5.f);
  c.bind(def.tensor_args);
  if (op == "gelu_and_mul") c.as<GeluAndMulArgs>().approximate = wl_gelu_approx(w, op.c_str());
  if (op == "gelu") c.as<GeluArgs>().approximate = wl_gelu_approx(w, op.c_str());
  return c;
}

TEST(ActivationGpu, BenchShapesAgainstOracleOnSampledRows) {
  FK_REQUIRE_GPU();
  for (const char* op : kActivationOps) {
    const OpDef& def = OpRegistry::global().def(op);
    for (const Json& w : def.bench_workloads) {
      SCOPED_TRACE(std::string(op) + " " + w.dump());
      OpCase c = device_case(def, w, test::seed_for(std::string("act_gpu_") + op + w.dump()));
      test::check_sampled_rows(def, c, std::vector<bool>(def.tensor_args.size(), true),
                               test::sample_rows(wl_int(w, "tokens")));
      test::report_time(def, c);
    }
  }
}

struct Geometry {
  int64_t T, cols, pad, offset;
};
const Geometry kGeometries[] = {
    {5, 14336, 8, 0},   // strided rows, 16-byte aligned: vector path
    {3, 100000, 8, 0},  // long strided rows over many blocks
    {5, 4096, 1, 0},    // row stride not a multiple of the vector: scalar path
    {5, 4096, 0, 1},    // misaligned base pointer: scalar path
    {4, 1000, 3, 5},    // both
};

template <class MakeArgs>
void check_strided(const char* what, DType dt, const Geometry& g, bool gated, MakeArgs make_args) {
  const uint64_t seed = test::seed_for(std::string("act_gpu_strided_") + what, static_cast<uint64_t>(g.cols));
  const int64_t in_cols = gated ? 2 * g.cols : g.cols;
  // Buffer 0: out (cols wide); buffer 1: input (in_cols wide). Row strides 8 elements
  // apart keep the alignment class of the geometry.
  std::vector<test::StridedBuffer> host = {
      test::make_strided(g.T, g.cols, g.cols + g.pad, g.offset, dt, seed, 1, -5.f, 5.f),
      test::make_strided(g.T, in_cols, in_cols + g.pad + 8, g.offset, dt, seed, 2, -5.f, 5.f)};
  std::vector<test::StridedBuffer> dev = {test::strided_to(host[0], Device::cuda()),
                                          test::strided_to(host[1], Device::cuda())};
  test::expect_ok(DeviceType::cpu, make_args(host));
  test::expect_ok(DeviceType::cuda, make_args(dev));
  rt::device_synchronize();
  const std::string label = std::string(what) + " " + std::string(dtype_name(dt)) + " T=" + std::to_string(g.T) +
                            " cols=" + std::to_string(g.cols) + " pad=" + std::to_string(g.pad) +
                            " offset=" + std::to_string(g.offset);
  test::expect_strided_near(dev[0], host[0], default_tolerance(dt), label + " out");
  test::expect_strided_near(dev[1], host[1], default_tolerance(dt), label + " input");
}

TEST(ActivationGpu, StridedAndMisalignedViewsMatchCpu) {
  FK_REQUIRE_GPU();
  using Bufs = std::vector<test::StridedBuffer>;
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    for (const Geometry& g : kGeometries) {
      check_strided("silu_and_mul", dt, g, true, [](const Bufs& b) { return SiluAndMulArgs{b[0].view, b[1].view}; });
      check_strided("gelu_and_mul_tanh", dt, g, true,
                    [](const Bufs& b) { return GeluAndMulArgs{b[0].view, b[1].view, GeluApprox::tanh}; });
      check_strided("gelu_and_mul_erf", dt, g, true,
                    [](const Bufs& b) { return GeluAndMulArgs{b[0].view, b[1].view, GeluApprox::none}; });
      check_strided("gelu", dt, g, false, [](const Bufs& b) { return GeluArgs{b[0].view, b[1].view, GeluApprox::none}; });
      check_strided("relu2", dt, g, false, [](const Bufs& b) { return Relu2Args{b[0].view, b[1].view}; });
      // In place: buffer 0 is the logits; buffer 1 is left alone.
      check_strided("logit_softcap", dt, g, false, [](const Bufs& b) { return LogitSoftcapArgs{b[0].view, 3.f}; });
    }
  }
}

// Very large and very small inputs: exp overflow in silu, tanh saturation, NaN in relu2.
TEST(ActivationGpu, ExtremeInputs) {
  FK_REQUIRE_GPU();
  const float vals[] = {-1e30f, -100.f, -88.5f, -20.f, -1e-30f, 0.f, 1e-30f, 20.f, 88.5f, 100.f, 1e30f, -3.f, 3.f, 0.5f, -0.5f, 7.f};
  for (DType dt : {DType::f32, DType::bf16}) {
    const int64_t n = 16;
    Tensor in = Tensor::empty({1, 2 * n}, dt);
    for (int64_t j = 0; j < n; ++j) set(in.view(), vals[j], 0, j), set(in.view(), 1.0, 0, n + j);
    Tensor ind = in.to(Device::cuda());
    Tensor out = Tensor::empty({1, n}, dt), outd = Tensor::empty({1, n}, dt, Device::cuda());
    test::expect_ok(DeviceType::cpu, SiluAndMulArgs{out, in});
    test::expect_ok(DeviceType::cuda, SiluAndMulArgs{outd, ind});
    rt::device_synchronize();
    test::expect_views_near(outd.to(Device::cpu()).view(), out.view(), default_tolerance(dt), "silu_and_mul extremes");

    TensorView x = in.view();
    x.shape[1] = n;
    TensorView xd = ind.view();
    xd.shape[1] = n;
    for (GeluApprox g : {GeluApprox::none, GeluApprox::tanh}) {
      test::expect_ok(DeviceType::cpu, GeluArgs{out, x, g});
      test::expect_ok(DeviceType::cuda, GeluArgs{outd, xd, g});
      rt::device_synchronize();
      test::expect_views_near(outd.to(Device::cpu()).view(), out.view(), default_tolerance(dt), "gelu extremes");
    }
    Tensor logits = Tensor::empty({1, n}, dt);
    for (int64_t j = 0; j < n; ++j) set(logits.view(), vals[j], 0, j);
    Tensor logitsd = logits.to(Device::cuda());
    test::expect_ok(DeviceType::cpu, LogitSoftcapArgs{logits, 30.f});
    test::expect_ok(DeviceType::cuda, LogitSoftcapArgs{logitsd, 30.f});
    rt::device_synchronize();
    test::expect_views_near(logitsd.to(Device::cpu()).view(), logits.view(), default_tolerance(dt), "softcap extremes");
  }
  Tensor nan_in = Tensor::empty({1, 8}, DType::f32);
  for (int j = 0; j < 8; ++j) nan_in.data_as<float>()[j] = j == 3 ? std::numeric_limits<float>::quiet_NaN() : j - 4.f;
  Tensor nan_out = Tensor::empty({1, 8}, DType::f32, Device::cuda());
  Tensor nan_ind = nan_in.to(Device::cuda());
  test::expect_ok(DeviceType::cuda, Relu2Args{nan_out, nan_ind});
  rt::device_synchronize();
  Tensor got = nan_out.to(Device::cpu());
  EXPECT_TRUE(std::isnan(got.data_as<float>()[3]));
  EXPECT_EQ(got.data_as<float>()[0], 0.f);
  EXPECT_EQ(got.data_as<float>()[7], 9.f);
}

}  // namespace
}  // namespace fk
