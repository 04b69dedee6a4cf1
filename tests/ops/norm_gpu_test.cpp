// The norm ops' CUDA baselines on what the generic GPU oracle test does not cover: the
// production (bench) shapes, checked against the oracle on a sample of rows (the full CPU
// oracle would take minutes) with their time and bandwidth printed; and row-strided and
// misaligned views (which reach the scalar fallback), against the CPU implementation.
#include <gtest/gtest.h>

#include "fk/ops/norm.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using namespace ops;

const char* const kNormOps[] = {"rms_norm", "gemma_rms_norm", "fused_add_rms_norm", "gemma_fused_add_rms_norm",
                                "layer_norm"};

bool is_gemma(const std::string& op) { return op.rfind("gemma_", 0) == 0; }

void set_eps(OpCase& c, const std::string& op, float eps) {
  if (op == "rms_norm") c.as<RmsNormArgs>().eps = eps;
  else if (op == "gemma_rms_norm") c.as<GemmaRmsNormArgs>().eps = eps;
  else if (op == "fused_add_rms_norm") c.as<FusedAddRmsNormArgs>().eps = eps;
  else if (op == "gemma_fused_add_rms_norm") c.as<GemmaFusedAddRmsNormArgs>().eps = eps;
  else c.as<LayerNormArgs>().eps = eps;
}

// The op's inputs for a workload, drawn on the device (same ranges as its make_case).
OpCase device_case(const OpDef& def, const Json& w, uint64_t seed) {
  const int64_t T = wl_int(w, "tokens"), H = wl_int(w, "hidden");
  const DType dt = wl_dtype(w);
  OpCase c;
  c.workload = w;
  c.args.assign(def.args_size, std::byte{0});
  c.tensors.resize(def.tensor_args.size());
  for (size_t i = 0; i < def.tensor_args.size(); ++i) {
    const std::string& name = def.tensor_args[i].name;
    if (name == "out") c.tensors[i] = Tensor::empty({T, H}, dt, Device::cuda());
    else if (name == "input") c.tensors[i] = test::device_uniform({T, H}, dt, seed, 1, -2.f, 2.f);
    else if (name == "residual") c.tensors[i] = test::device_uniform({T, H}, dt, seed, 3, -4.f, 4.f);
    else if (name == "weight")
      c.tensors[i] = is_gemma(def.name) ? test::device_uniform({H}, dt, seed, 2, -0.5f, 0.5f)
                                        : test::device_uniform({H}, dt, seed, 2, 0.5f, 1.5f);
    else if (name == "bias" && wl_bool(w, "bias", true)) c.tensors[i] = test::device_uniform({H}, dt, seed, 3, -0.5f, 0.5f);
  }
  c.bind(def.tensor_args);
  set_eps(c, def.name, static_cast<float>(wl_float(w, "eps", def.name == "layer_norm" ? 1e-5 : 1e-6)));
  return c;
}

TEST(NormGpu, BenchShapesAgainstOracleOnSampledRows) {
  FK_REQUIRE_GPU();
  for (const char* op : kNormOps) {
    const OpDef& def = OpRegistry::global().def(op);
    for (const Json& w : def.bench_workloads) {
      SCOPED_TRACE(std::string(op) + " " + w.dump());
      OpCase c = device_case(def, w, test::seed_for(std::string("norm_gpu_") + op + w.dump()));
      std::vector<bool> row_tensor;
      for (const TensorArg& a : def.tensor_args) row_tensor.push_back(a.name != "weight" && a.name != "bias");
      test::check_sampled_rows(def, c, row_tensor, test::sample_rows(wl_int(w, "tokens")));
      test::report_time(def, c);
    }
  }
}

// Strided / offset geometries: {tokens, hidden, row padding, element offset}.
struct Geometry {
  int64_t T, H, pad, offset;
};
const Geometry kGeometries[] = {
    {5, 4096, 8, 0},   // strided rows, still 16-byte aligned: fast path
    {37, 256, 8, 0},   // strided rows, several rows per block
    {3, 40000, 8, 0},  // strided rows, looped path
    {5, 4096, 1, 0},   // row stride not a multiple of the vector: scalar path
    {5, 4096, 0, 1},   // misaligned base pointer: scalar path
    {4, 1000, 3, 5},   // both, short rows
};

template <class MakeArgs>
void check_strided(const char* what, DType dt, const Geometry& g, MakeArgs make_args, int num_buffers) {
  const uint64_t seed = test::seed_for(std::string("norm_gpu_strided_") + what, static_cast<uint64_t>(g.H));
  std::vector<test::StridedBuffer> host, dev;
  for (int b = 0; b < num_buffers; ++b) {
    // The row tensors; each its own row stride (8 elements apart keep the alignment class).
    host.push_back(test::make_strided(g.T, g.H, g.H + g.pad + 8 * b, g.offset, dt, seed, 10 + b, -2.f, 2.f));
    dev.push_back(test::strided_to(host.back(), Device::cuda()));
  }
  Tensor w = ops::random_tensor({g.H}, dt, seed, 1, 0.5f, 1.5f);
  Tensor w_dev = w.to(Device::cuda());
  const auto cpu_args = make_args(host, w.view());
  const auto cuda_args = make_args(dev, w_dev.view());
  test::expect_ok(DeviceType::cpu, cpu_args);
  test::expect_ok(DeviceType::cuda, cuda_args);
  rt::device_synchronize();
  const std::string label = std::string(what) + " " + std::string(dtype_name(dt)) + " T=" + std::to_string(g.T) +
                            " H=" + std::to_string(g.H) + " pad=" + std::to_string(g.pad) +
                            " offset=" + std::to_string(g.offset);
  for (int b = 0; b < num_buffers; ++b)
    test::expect_strided_near(dev[b], host[b], default_tolerance(dt), label + " buffer " + std::to_string(b));
}

TEST(NormGpu, StridedAndMisalignedViewsMatchCpu) {
  FK_REQUIRE_GPU();
  using Bufs = std::vector<test::StridedBuffer>;
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    for (const Geometry& g : kGeometries) {
      // Buffer 0: out (or input for the fused ops); buffer 1: input (or residual).
      check_strided("rms_norm", dt, g, [](const Bufs& b, TensorView w) { return RmsNormArgs{b[0].view, b[1].view, w, 1e-6f}; }, 2);
      check_strided("gemma_rms_norm", dt, g,
                    [](const Bufs& b, TensorView w) { return GemmaRmsNormArgs{b[0].view, b[1].view, w, 1e-6f}; }, 2);
      check_strided("fused_add_rms_norm", dt, g,
                    [](const Bufs& b, TensorView w) { return FusedAddRmsNormArgs{b[0].view, b[1].view, w, 1e-6f}; }, 2);
      check_strided("gemma_fused_add_rms_norm", dt, g,
                    [](const Bufs& b, TensorView w) { return GemmaFusedAddRmsNormArgs{b[0].view, b[1].view, w, 1e-6f}; },
                    2);
      check_strided("layer_norm", dt, g,
                    [](const Bufs& b, TensorView w) { return LayerNormArgs{b[0].view, b[1].view, w, w, 1e-5f}; }, 2);
      check_strided("layer_norm_no_bias", dt, g,
                    [](const Bufs& b, TensorView w) { return LayerNormArgs{b[0].view, b[1].view, w, TensorView{}, 1e-5f}; },
                    2);
    }
  }
}

// fused_add_rms_norm updates both tensors in place on the device too, and a second call
// continues from the first one's residual.
TEST(NormGpu, FusedAddUpdatesBothTensorsAcrossCalls) {
  FK_REQUIRE_GPU();
  const int64_t T = 9, H = 4096;
  const uint64_t seed = test::seed_for("norm_gpu_fused_twice");
  Tensor x = ops::random_tensor({T, H}, DType::bf16, seed, 1, -2.f, 2.f);
  Tensor r = ops::random_tensor({T, H}, DType::bf16, seed, 2, -2.f, 2.f);
  Tensor w = ops::random_tensor({H}, DType::bf16, seed, 3, 0.5f, 1.5f);
  Tensor xd = x.to(Device::cuda()), rd = r.to(Device::cuda()), wd = w.to(Device::cuda());
  for (int call = 0; call < 2; ++call) {
    test::expect_ok(DeviceType::cpu, FusedAddRmsNormArgs{x, r, w, 1e-6f});
    test::expect_ok(DeviceType::cuda, FusedAddRmsNormArgs{xd, rd, wd, 1e-6f});
    rt::device_synchronize();
    // After the first call the input is the normalised residual (what the CPU computed
    // within tolerance); continue the second call from the CPU's values on both sides.
    Tensor xh = xd.to(Device::cpu()), rh = rd.to(Device::cpu());
    test::expect_views_near(rh.view(), r.view(), default_tolerance(DType::bf16), "residual after call " + std::to_string(call));
    test::expect_views_near(xh.view(), x.view(), default_tolerance(DType::bf16), "input after call " + std::to_string(call));
    xd.copy_from(x);
    rd.copy_from(r);
  }
}

}  // namespace
}  // namespace fk
