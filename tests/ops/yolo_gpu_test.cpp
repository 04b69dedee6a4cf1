// yolov10_c2f on CUDA (its composed baseline of conv2d calls) against the CPU oracle at
// YOLOv10n's model.4 and model.13 shapes (batch 1, f16), on sampled outputs.
#include <gtest/gtest.h>

#include <cmath>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/yolo.h"
#include "fk/runtime.h"
#include "ops/common/case_builder.h"
#include "support/test_seed.h"

namespace fk {
namespace {

TEST(Yolov10C2fGpu, MatchesOracleAtYolov10nShapes) {
  FK_REQUIRE_GPU();
  const OpDef& def = OpRegistry::global().def("yolov10_c2f");
  const Json shapes[] = {
      {{"height", 40}, {"in_channels", 64}, {"out_channels", 64}, {"bottlenecks", 2}, {"shortcut", true}},
      {{"height", 20}, {"in_channels", 384}, {"out_channels", 128}},
  };
  for (const Json& w : shapes) {
    const uint64_t seed = test::seed_for("Yolov10C2fGpu", static_cast<uint64_t>(w["in_channels"].get<int64_t>()));
    const OpCase host = def.make_case(w, seed);
    ops::Yolov10C2fArgs a = host.as<ops::Yolov10C2fArgs>();
    std::vector<Tensor> dev;
    for (const Tensor& t : host.tensors) dev.push_back(t.to(Device::cuda()));
    ops::Yolov10C2fArgs d = a;
    d.out = dev[0], d.input = dev[1], d.cv1_weight = dev[2], d.cv1_bias = dev[3], d.cv2_weight = dev[4], d.cv2_bias = dev[5];
    constexpr int kSlots = 2 * ops::Yolov10C2fArgs::kMaxBottlenecks;
    for (int i = 0; i < kSlots; ++i) d.m_weight[i] = dev[6 + i], d.m_bias[i] = dev[6 + kSlots + i];
    d.concat = dev[6 + 2 * kSlots], d.mid = dev[7 + 2 * kSlots];
    call_op(d, DeviceType::cuda, nullptr);
    rt::stream_synchronize(nullptr);
    const Tensor got = dev[0].to(Device::cpu());
    const Tensor want = Tensor::empty(host.tensors[0].shape(), DType::f64);
    a.out = want;
    call_op(a, DeviceType::cpu, nullptr);
    const Tolerance tol = def.tolerance(host, def.tensor_args[0], DType::f16);
    for (int64_t i = 0; i < want.numel(); i += 7) {
      const double g = load_element(static_cast<const char*>(got.data()) + i * 2, DType::f16), r = want.data_as<double>()[i];
      ASSERT_LE(std::abs(g - r), tol.atol + tol.rtol * std::abs(r)) << w.dump() << " element " << i;
    }
  }
}

}  // namespace
}  // namespace fk
