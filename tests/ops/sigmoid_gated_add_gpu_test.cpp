// sigmoid_gated_add's CUDA baseline on what the generic GPU oracle test does not cover: the
// production (bench) shapes, checked against the oracle on a sample of rows with their time
// and bandwidth printed; row-strided and misaligned views (the scalar fallback) and gates
// taken from a column of a wider matrix, against the CPU implementation, with the padding
// untouched; extreme gate logits (saturation, overflow of exp, NaN).
#include <gtest/gtest.h>

#include <iterator>
#include <limits>

#include "fk/ops/moe.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::SigmoidGatedAddArgs;

const OpDef& def() { return OpRegistry::global().def(SigmoidGatedAddArgs::kName); }

TEST(SigmoidGatedAddGpu, BenchShapesAgainstOracleOnSampledRows) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().bench_workloads) {
    SCOPED_TRACE(w.dump());
    const int64_t T = ops::wl_int(w, "tokens"), H = ops::wl_int(w, "hidden");
    const DType dt = ops::wl_dtype(w);
    const uint64_t seed = test::seed_for("sigmoid_gated_add_gpu" + w.dump());
    OpCase c;
    c.workload = w;
    c.args.assign(def().args_size, std::byte{0});
    c.tensors = {test::device_uniform({T, H}, dt, seed, 1, -2.f, 2.f), test::device_uniform({T, H}, dt, seed, 2, -2.f, 2.f),
                 test::device_uniform({T, 1}, dt, seed, 3, -8.f, 8.f)};
    c.bind(def().tensor_args);
    test::check_sampled_rows(def(), c, {true, true, true}, test::sample_rows(T));
    test::report_time(def(), c);
  }
}

struct Geometry {
  int64_t T, H, pad, offset, gate_stride;
};
const Geometry kGeometries[] = {
    {5, 2048, 8, 0, 1},   // padded rows, 16-byte aligned: vector path
    {3, 100000, 8, 0, 3}, // long rows over many blocks; the gate a column of a [T, 3] matrix
    {5, 4096, 1, 0, 1},   // row stride not a multiple of the vector: scalar path
    {5, 4096, 0, 1, 2},   // misaligned base pointer: scalar path
    {4, 1000, 3, 5, 7},   // both
    {1, 4096, 3, 0, 5},   // one row: its stride does not matter, vector path
    {70000, 8, 0, 0, 1},  // many short rows: one warp per row
};

void check_geometry(DType dt, const Geometry& g) {
  const std::string label = std::string(dtype_name(dt)) + " T=" + std::to_string(g.T) + " H=" + std::to_string(g.H) +
                            " pad=" + std::to_string(g.pad) + " offset=" + std::to_string(g.offset) +
                            " gate_stride=" + std::to_string(g.gate_stride);
  const uint64_t seed = test::seed_for("sigmoid_gated_add_gpu_strided" + label);
  // out and input with padded rows; the gate as the last column of a [T, gate_stride] matrix.
  std::vector<test::StridedBuffer> host = {
      test::make_strided(g.T, g.H, g.H + g.pad, g.offset, dt, seed, 1, -2.f, 2.f),
      test::make_strided(g.T, g.H, g.H + g.pad + 8, g.offset, dt, seed, 2, -2.f, 2.f),
      test::make_strided(g.T, g.gate_stride, g.gate_stride, 0, dt, seed, 3, -8.f, 8.f)};
  std::vector<test::StridedBuffer> dev;
  for (const auto& b : host) dev.push_back(test::strided_to(b, Device::cuda()));
  auto args = [&](const std::vector<test::StridedBuffer>& b) {
    TensorView gate = b[2].view;
    gate.data = gate.element_ptr(g.gate_stride - 1);
    gate.shape[1] = 1;
    return SigmoidGatedAddArgs{b[0].view, b[1].view, gate};
  };
  test::expect_ok(DeviceType::cpu, args(host));
  test::expect_ok(DeviceType::cuda, args(dev));
  rt::device_synchronize();
  test::expect_strided_near(dev[0], host[0], default_tolerance(dt), label + " out");
  test::expect_strided_near(dev[1], host[1], {0, 0}, label + " input");
  test::expect_strided_near(dev[2], host[2], {0, 0}, label + " gate");
}

TEST(SigmoidGatedAddGpu, StridedAndMisalignedViewsMatchCpu) {
  FK_REQUIRE_GPU();
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (const Geometry& g : kGeometries) check_geometry(dt, g);
}

// Gate logits where exp overflows or underflows (the sigmoid saturates to exactly 0 or 1),
// around zero, and NaN (the row becomes NaN, as torch.sigmoid makes it).
TEST(SigmoidGatedAddGpu, ExtremeGates) {
  FK_REQUIRE_GPU();
  const float gates[] = {-1e30f, -100.f, -88.5f, -20.f, -1e-30f, 0.f, 1e-30f, 0.5f,
                         20.f,   88.5f,  100.f,  1e30f, -3.f,    3.f, std::numeric_limits<float>::quiet_NaN()};
  const int64_t T = static_cast<int64_t>(std::size(gates)), H = 16;
  for (DType dt : {DType::f32, DType::bf16}) {
    Tensor out = Tensor::empty({T, H}, dt), in = Tensor::empty({T, H}, dt), gate = Tensor::empty({T, 1}, dt);
    for (int64_t t = 0; t < T; ++t) {
      set(gate.view(), gates[t], t, 0);
      for (int64_t h = 0; h < H; ++h) set(out.view(), h - 8.0, t, h), set(in.view(), 0.25 * h + 1.0, t, h);
    }
    Tensor out_d = out.to(Device::cuda()), in_d = in.to(Device::cuda()), gate_d = gate.to(Device::cuda());
    test::expect_ok(DeviceType::cpu, SigmoidGatedAddArgs{out, in, gate});
    test::expect_ok(DeviceType::cuda, SigmoidGatedAddArgs{out_d, in_d, gate_d});
    rt::device_synchronize();
    test::expect_views_near(out_d.to(Device::cpu()).view(), out.view(), default_tolerance(dt),
                            std::string("extreme gates ") + std::string(dtype_name(dt)));
  }
}

}  // namespace
}  // namespace fk
