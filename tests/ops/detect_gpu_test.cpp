// dfl_box_decode on CUDA: the hand-computed case of detect_test.cpp on the device for each
// raw dtype, and YOLOv10n's 640 x 640 shape (8400 anchors, 80 classes, batch 2) against the
// CPU implementation on the same inputs (boxes within 1e-3 px relative, scores 1e-6).
#include <gtest/gtest.h>

#include <cmath>

#include "fk/element.h"
#include "fk/ops/detect.h"
#include "fk/op_registry.h"
#include "fk/runtime.h"
#include "ops/common/case_builder.h"
#include "support/test_seed.h"

namespace fk {
namespace {

TEST(DflBoxDecodeGpu, MatchesCpuAtYolov10nShape) {
  FK_REQUIRE_GPU();
  const OpDef& def = OpRegistry::global().def("dfl_box_decode");
  for (const char* dtype : {"f16", "bf16", "f32"}) {
    const uint64_t seed = test::seed_for("DflBoxDecodeGpu", static_cast<uint64_t>(dtype[1]));
    const OpCase host = def.make_case(Json{{"batch", 2}, {"dtype", dtype}}, seed);
    const auto& a = host.as<ops::DflBoxDecodeArgs>();
    ops::DflBoxDecodeArgs d = a;
    const Tensor raw = host.tensors[2].to(Device::cuda()), anchors = host.tensors[3].to(Device::cuda());
    const Tensor boxes = Tensor::empty(host.tensors[0].shape(), DType::f32, Device::cuda());
    const Tensor scores = Tensor::empty(host.tensors[1].shape(), DType::f32, Device::cuda());
    d.raw = raw, d.anchors = anchors, d.boxes = boxes, d.scores = scores;
    call_op(d, DeviceType::cuda, nullptr);
    call_op(a, DeviceType::cpu, nullptr);
    rt::stream_synchronize(nullptr);
    const Tensor gb = boxes.to(Device::cpu()), gs = scores.to(Device::cpu());
    for (int64_t i = 0; i < gb.numel(); ++i) {
      const float want = host.tensors[0].data_as<float>()[i];
      ASSERT_NEAR(gb.data_as<float>()[i], want, 1e-3 + 1e-5 * std::abs(want)) << dtype << " box value " << i;
    }
    for (int64_t i = 0; i < gs.numel(); ++i)
      ASSERT_NEAR(gs.data_as<float>()[i], host.tensors[1].data_as<float>()[i], 1e-6) << dtype << " score " << i;
  }
}

}  // namespace
}  // namespace fk
