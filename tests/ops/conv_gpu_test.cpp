// The conv family's CUDA baselines on what the generic GPU oracle test (every test workload
// against the f64 reference) does not cover: YOLOv10n's production shapes at 640x640 (the bench
// workloads), checked against the oracle on their first and last images with their time
// printed; channel-slice views (a C2f conv reading one slice of a buffer and writing another, a
// concatenation into a slice) against the CPU implementation with everything outside the
// written slice untouched; the scalar paths of the copies (odd channel counts, misaligned
// slices); SiLU at large magnitudes; NaN through max_pool2d; conv2d's test workloads on its
// default paths and its variants `simt` (the fp32-pipe kernel beside the tensor-core ones) and
// `scalar_loads` (the element-wise kernels beside the 16-byte-vector ones) on the same shapes.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "fk/element.h"
#include "fk/ops/conv.h"
#include "harness/check/op_check.h"
#include "ops/common/case_builder.h"
#include "ops/conv_test_util.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::Conv2dArgs;
using ops::ConvActivation;

OpCase to_cuda(const OpDef& def, const OpCase& host) {
  OpCase c = host;
  for (Tensor& t : c.tensors)
    if (t.defined()) t = t.to(Device::cuda());
  c.bind(def.tensor_args);
  return c;
}

// Every bench workload of `op`, against the oracle on the first and last image.
// batch_tensors[i]: whether tensor argument i has the images as its first dimension.
void check_bench_workloads(const char* op, std::vector<bool> batch_tensors) {
  const OpDef& def = OpRegistry::global().def(op);
  ASSERT_EQ(batch_tensors.size(), def.tensor_args.size()) << op;
  for (const Json& w : def.bench_workloads) {
    SCOPED_TRACE(w.dump());
    const OpCase host = def.make_case(w, test::seed_for(std::string(op) + "_gpu_bench" + w.dump()));
    OpCase dev = to_cuda(def, host);
    const int64_t batch = ops::wl_int(w, "batch", 1);
    std::vector<int64_t> images = {0};
    if (batch > 1) images.push_back(batch - 1);
    // An absent optional tensor (no elements) is passed whole: gathering "images" of it would
    // make a present one.
    std::vector<bool> per_image = batch_tensors;
    for (size_t i = 0; i < per_image.size(); ++i)
      per_image[i] = per_image[i] && host.tensors[i].defined() && host.tensors[i].numel() > 0;
    test::check_sampled_rows(def, dev, per_image, images);
    test::report_time(def, dev);
  }
}

TEST(ConvGpu, Conv2dYoloShapesAgainstOracle) {
  FK_REQUIRE_GPU();
  check_bench_workloads(Conv2dArgs::kName, {true, true, false, false, true});
}

// Selects one of conv2d's variants for the scope ("": the default paths).
struct Conv2dVariant {
  explicit Conv2dVariant(const std::string& name) {
    if (!name.empty()) OpRegistry::global().select_variants(Conv2dArgs::kName, {name});
  }
  ~Conv2dVariant() { OpRegistry::global().select_variants(Conv2dArgs::kName, {}); }
};

class Conv2dVariantGpu : public testing::TestWithParam<std::string> {};

TEST_P(Conv2dVariantGpu, AgainstOracle) {
  FK_REQUIRE_GPU();
  Conv2dVariant variant(GetParam());
  const OpDef& def = OpRegistry::global().def(Conv2dArgs::kName);
  for (const Json& w : def.test_workloads) {
    const uint64_t seed = test::seed_for("conv2d_" + GetParam() + w.dump());
    const auto r = bench::check_op(def, w, seed, DeviceType::cuda);
    EXPECT_TRUE(r.passed) << w.dump() << " seed " << seed << ": " << r.message;
  }
  // The default paths' bench workloads are Conv2dYoloShapesAgainstOracle's.
  if (!GetParam().empty()) check_bench_workloads(Conv2dArgs::kName, {true, true, false, false, true});
}

INSTANTIATE_TEST_SUITE_P(Conv2d, Conv2dVariantGpu, testing::Values("", "simt", "scalar_loads"),
                         [](const auto& info) { return info.param.empty() ? std::string("default") : info.param; });

TEST(ConvGpu, PoolUpsampleConcatBenchShapesAgainstOracle) {
  FK_REQUIRE_GPU();
  check_bench_workloads(ops::MaxPool2dArgs::kName, {true, true});
  check_bench_workloads(ops::UpsampleNearest2dArgs::kName, {true, true});
  std::vector<bool> concat(1 + ops::ConcatChannelsArgs::kMaxInputs, true);
  check_bench_workloads(ops::ConcatChannelsArgs::kName, concat);
}

using test::channel_slice;

// The same call ran on the CPU and on the GPU on buffers of equal contents: the whole buffers
// compared (outside the written slice both are untouched, so equal bit for bit).
void expect_buffers_near(const Tensor& dev, const Tensor& host, Tolerance tol, const std::string& what) {
  test::expect_tensors_near(dev, host, tol, what);
}

TEST(ConvGpu, Conv2dChannelSlicesMatchCpu) {
  FK_REQUIRE_GPU();
  struct Geometry {
    int64_t total, in0, cin, out0, cout, kernel;
    int stride, groups;
    bool residual;  // the input slice is also the residual (a bottleneck's shortcut)
  };
  const Geometry geometries[] = {
      {48, 0, 16, 16, 16, 3, 1, 1, true},    // a C2f bottleneck: aligned slices
      {40, 3, 9, 17, 12, 3, 2, 1, false},    // odd offsets and counts, stride 2
      {64, 32, 32, 0, 32, 3, 1, 32, true},   // depthwise on slices (CIB)
      {70, 5, 30, 40, 30, 1, 1, 1, false},   // 1x1
  };
  for (DType dt : {DType::f16, DType::bf16, DType::f32})
    for (const Geometry& g : geometries) {
      const std::string label = std::string(dtype_name(dt)) + " slice " + std::to_string(g.in0) + "+" +
                                std::to_string(g.cin) + " -> " + std::to_string(g.out0) + "+" + std::to_string(g.cout);
      const uint64_t seed = test::seed_for("conv2d_gpu_slices" + label);
      const int64_t H = 11, W = 9;
      Tensor buffer = ops::random_tensor({2, H, W, g.total}, dt, seed, 1);
      // The output slice has the input's grid only for stride 1; a strided conv writes into a
      // second buffer of the output's grid.
      const int64_t P = (H - 1) / g.stride + 1, Q = (W - 1) / g.stride + 1;
      Tensor out_buffer = g.stride == 1 ? Tensor() : ops::random_tensor({2, P, Q, g.total}, dt, seed, 2);
      const Tensor weight =
          ops::random_tensor({g.cout, g.kernel, g.kernel, g.cin / g.groups}, dt, seed, 3, -0.25f, 0.25f);
      const Tensor bias = ops::random_tensor({g.cout}, dt, seed, 4);
      Tensor dev_buffer = buffer.to(Device::cuda());
      Tensor dev_out_buffer = out_buffer.defined() ? out_buffer.to(Device::cuda()) : Tensor();
      const Tensor dev_weight = weight.to(Device::cuda()), dev_bias = bias.to(Device::cuda());
      const auto args = [&](const Tensor& buf, const Tensor& obuf, const Tensor& w, const Tensor& b) {
        Conv2dArgs a;
        a.input = channel_slice(buf, g.in0, g.cin);
        a.out = channel_slice(obuf.defined() ? obuf : buf, g.out0, g.cout);
        a.weight = w;
        a.bias = b;
        a.stride_h = a.stride_w = g.stride;
        a.pad_h = a.pad_w = static_cast<int32_t>(g.kernel / 2);
        a.groups = g.groups;
        a.activation = ConvActivation::silu;
        if (g.residual) a.residual = a.input;
        return a;
      };
      test::expect_ok(DeviceType::cpu, args(buffer, out_buffer, weight, bias));
      test::expect_ok(DeviceType::cuda, args(dev_buffer, dev_out_buffer, dev_weight, dev_bias));
      rt::device_synchronize();
      const Tolerance tol = default_tolerance(dt);
      expect_buffers_near(dev_buffer, buffer, tol, label + " buffer");
      if (out_buffer.defined()) expect_buffers_near(dev_out_buffer, out_buffer, tol, label + " out buffer");
    }
}

TEST(ConvGpu, CopiesOnSlicesAndOddChannelsMatchCpu) {
  FK_REQUIRE_GPU();
  for (DType dt : {DType::f16, DType::bf16, DType::f32})
    for (int64_t c0 : {0, 8, 3}) {
      const std::string label = std::string(dtype_name(dt)) + " c0=" + std::to_string(c0);
      const uint64_t seed = test::seed_for("conv_gpu_copies" + label);
      // upsample: a slice of channels [c0, c0 + 16) of a 40-channel buffer into a slice of
      // another (16-byte chunks when c0 = 0 or 8 in 16-bit dtypes; element copies at 3).
      const Tensor src = ops::random_tensor({2, 5, 3, 40}, dt, seed, 1);
      Tensor up = ops::random_tensor({2, 10, 6, 40}, dt, seed, 2);
      Tensor up_dev = up.to(Device::cuda());
      const Tensor src_dev = src.to(Device::cuda());
      test::expect_ok(DeviceType::cpu,
                      ops::UpsampleNearest2dArgs{channel_slice(up, c0, 16), channel_slice(src, c0, 16), 2, 2});
      test::expect_ok(DeviceType::cuda,
                      ops::UpsampleNearest2dArgs{channel_slice(up_dev, c0, 16), channel_slice(src_dev, c0, 16), 2, 2});
      // concat: three inputs (16, 5 and 8 channels) into channels [c0, c0 + 29) of a buffer.
      Tensor cat = ops::random_tensor({2, 5, 3, 40}, dt, seed, 3);
      Tensor cat_dev = cat.to(Device::cuda());
      const Tensor b = ops::random_tensor({2, 5, 3, 5}, dt, seed, 4), b_dev = b.to(Device::cuda());
      const auto cat_args = [&](const Tensor& out, const Tensor& s, const Tensor& bb) {
        ops::ConcatChannelsArgs a;
        a.out = channel_slice(out, c0, 29);
        a.inputs[0] = channel_slice(s, 0, 16);
        a.inputs[1] = bb;
        a.inputs[2] = channel_slice(s, 32, 8);
        a.num_inputs = 3;
        return a;
      };
      test::expect_ok(DeviceType::cpu, cat_args(cat, src, b));
      test::expect_ok(DeviceType::cuda, cat_args(cat_dev, src_dev, b_dev));
      rt::device_synchronize();
      expect_buffers_near(up_dev, up, {0, 0}, label + " upsample");
      expect_buffers_near(cat_dev, cat, {0, 0}, label + " concat");
    }
}

TEST(ConvGpu, SiluAtLargeMagnitudesAndPoolNan) {
  FK_REQUIRE_GPU();
  // 1x1 conv with weight 1: out = silu(x + 0). x from -1e4 to 1e4 (silu's both limits: -0 and
  // x), around zero, and f16's largest finite values.
  const double xs[] = {-60000, -1e4, -100, -20, -1, -1e-3, 0, 1e-3, 1, 20, 100, 1e4, 60000};
  const int64_t n = static_cast<int64_t>(std::size(xs));
  Tensor in = Tensor::empty({1, 1, n, 1}, DType::f16), w = Tensor::empty({1, 1, 1, 1}, DType::f16);
  for (int64_t i = 0; i < n; ++i) set(in.view(), xs[i], 0, 0, i, 0);
  set(w.view(), 1.0, 0, 0, 0, 0);
  Tensor out = Tensor::empty({1, 1, n, 1}, DType::f16);
  Tensor in_d = in.to(Device::cuda()), w_d = w.to(Device::cuda()), out_d = out.to(Device::cuda());
  const auto args = [](const Tensor& o, const Tensor& i, const Tensor& ww) {
    Conv2dArgs a;
    a.out = o, a.input = i, a.weight = ww, a.activation = ConvActivation::silu;
    return a;
  };
  test::expect_ok(DeviceType::cpu, args(out, in, w));
  test::expect_ok(DeviceType::cuda, args(out_d, in_d, w_d));
  rt::device_synchronize();
  test::expect_tensors_near(out_d, out, default_tolerance(DType::f16), "silu extremes");

  Tensor pin = ops::random_tensor({1, 6, 6, 4}, DType::bf16, test::seed_for("pool_nan_gpu"), 1);
  set(pin.view(), std::numeric_limits<double>::quiet_NaN(), 0, 2, 3, 1);
  Tensor pout = Tensor::empty({1, 6, 6, 4}, DType::bf16);
  Tensor pin_d = pin.to(Device::cuda()), pout_d = pout.to(Device::cuda());
  const auto pool = [](const Tensor& o, const Tensor& i) {
    ops::MaxPool2dArgs a;
    a.out = o, a.input = i, a.kernel_h = a.kernel_w = 5, a.pad_h = a.pad_w = 2;
    return a;
  };
  test::expect_ok(DeviceType::cpu, pool(pout, pin));
  test::expect_ok(DeviceType::cuda, pool(pout_d, pin_d));
  rt::device_synchronize();
  const Tensor got = pout_d.to(Device::cpu());
  for (int64_t h = 0; h < 6; ++h)
    for (int64_t x = 0; x < 6; ++x)
      for (int64_t c = 0; c < 4; ++c) {
        const double g = get(got.view(), 0, h, x, c), want = get(pout.view(), 0, h, x, c);
        if (std::isnan(want)) EXPECT_TRUE(std::isnan(g)) << h << " " << x << " " << c;
        else EXPECT_EQ(g, want) << h << " " << x << " " << c;
      }
}

}  // namespace
}  // namespace fk
