// concat_channels: definition (workloads, inputs, cost) and the CPU reference, which is
// also the CPU implementation (a copy: outputs are input values).
//
// Workload fields: batch (1), height, width, channels (a list: each input's channel count,
// 1 to 4 of them), dtype (f16).
#include <string>

#include "fk/element.h"
#include "ops/common/case_builder.h"
#include "ops/conv/conv_validate.h"

namespace fk::ops {
namespace {

using A = ConcatChannelsArgs;

void concat_channels_reference(const A& a) {
  const TensorView& out = a.out;
  int64_t offset = 0;
  for (int i = 0; i < a.num_inputs; ++i) {
    const TensorView& in = a.inputs[i];
    for (int64_t n = 0; n < in.shape[0]; ++n)
      for (int64_t h = 0; h < in.shape[1]; ++h)
        for (int64_t w = 0; w < in.shape[2]; ++w)
          for (int64_t c = 0; c < in.shape[3]; ++c) set(out, get(in, n, h, w, c), n, h, w, offset + c);
    offset += in.shape[3];
  }
}

fk_status concat_channels_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_concat_channels(a, DeviceType::cpu);
    concat_channels_reference(a);
  });
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  Json channels = Json::array();
  for (int i = 0; i < a.num_inputs; ++i) channels.push_back(a.inputs[i].shape[3]);
  return Json{{"batch", a.inputs[0].shape[0]}, {"height", a.inputs[0].shape[1]}, {"width", a.inputs[0].shape[2]},
              {"channels", channels},          {"dtype", std::string(dtype_name(a.inputs[0].dtype))}};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "conv";
  d.level = "L1";
  d.summary = "NHWC concatenation of 1 to 4 tensors along channels (torch.cat(dim=1) of NCHW), a strided copy";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out)}};
  for (int i = 0; i < A::kMaxInputs; ++i)
    d.tensor_args.push_back(
        {"inputs" + std::to_string(i), ArgRole::in, offsetof(A, inputs) + static_cast<size_t>(i) * sizeof(TensorView)});
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const int64_t N = wl_int(w, "batch", 1), H = wl_int(w, "height"), W = wl_int(w, "width");
    const std::vector<int64_t> channels = wl_int_list(w, "channels");
    const DType dt = wl_dtype(w, "dtype", DType::f16);
    FK_CHECK(N >= 0 && H >= 1 && W >= 1 && !channels.empty() &&
                 static_cast<int>(channels.size()) <= A::kMaxInputs,
             A::kName, " workload needs positive sizes and 1 to ", A::kMaxInputs, " channel counts, got ", w.dump());
    int64_t total = 0;
    for (int64_t ch : channels) {
      FK_CHECK(ch >= 1, A::kName, " workload: channel counts must be positive, got ", w.dump());
      total += ch;
    }
    OpCase c = begin_case<A>(w, 1 + A::kMaxInputs);
    c.tensors[0] = Tensor::empty({N, H, W, total}, dt);
    // Unused input slots stay empty (no elements), as absent optional arguments do.
    for (size_t i = 0; i < A::kMaxInputs; ++i)
      c.tensors[1 + i] = i < channels.size() ? random_tensor({N, H, W, channels[i]}, dt, seed, 1 + i, -4.f, 4.f)
                                             : absent_tensor(dt);
    c.as<A>().num_inputs = static_cast<int32_t>(channels.size());
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    return OpCost{2.0 * static_cast<double>(a.out.nbytes()), 0.0, DType::f32};
  };
  d.test_workloads = {
      {{"batch", 2}, {"height", 3}, {"width", 4}, {"channels", {5, 8, 3}}},
      {{"batch", 1}, {"height", 5}, {"width", 3}, {"channels", {16, 16, 16, 16}}, {"dtype", "bf16"}},
      {{"batch", 1}, {"height", 2}, {"width", 2}, {"channels", {7}}, {"dtype", "f32"}},
      {{"batch", 2}, {"height", 3}, {"width", 3}, {"channels", {24, 8}}},
      {{"batch", 0}, {"height", 2}, {"width", 2}, {"channels", {8, 8}}},
  };
  // YOLOv10n at 640x640: the FPN's concatenations (model.12, .15, .18, .21) and SPPF's, at
  // batch 1 and 32.
  for (int64_t b : {1, 32}) {
    d.bench_workloads.push_back({{"batch", b}, {"height", 40}, {"width", 40}, {"channels", {256, 128}}});
    d.bench_workloads.push_back({{"batch", b}, {"height", 80}, {"width", 80}, {"channels", {128, 64}}});
    d.bench_workloads.push_back({{"batch", b}, {"height", 20}, {"width", 20}, {"channels", {128, 128, 128, 128}}});
  }
  d.workload_from_call = workload_from_call;
  d.architectures = {"yolov10n"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("concat_channels", cpu, concat_channels_cpu);

}  // namespace
}  // namespace fk::ops
