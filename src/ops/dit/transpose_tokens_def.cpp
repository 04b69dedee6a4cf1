// transpose_tokens: definition (workloads, inputs, cost) and the CPU reference, which is also
// the CPU implementation: out[b, y, x, :] = input[b, x, y, :].
//
// Workload fields: batch (1), x, y, channels, dtype (bf16). input is [batch, x, y, channels].
#include <cstring>
#include <string>

#include "fk/element.h"
#include "ops/common/case_builder.h"
#include "ops/dit/dit_validate.h"

namespace fk::ops {
namespace {

using A = TransposeTokensArgs;

// A copy, so the engine's dtype is moved as bytes (one C-element row at a time: channels are
// contiguous on both sides), which keeps every bit, NaN payloads and -0 included. The oracle
// hands an f64 out: there each element goes through get/set, exact for every input dtype.
void transpose_tokens_reference(const A& a) {
  const TensorView &in = a.input, &out = a.out;
  const int64_t B = in.shape[0], X = in.shape[1], Y = in.shape[2], C = in.shape[3];
  const bool same_dtype = out.dtype == in.dtype;
  const size_t row_bytes = static_cast<size_t>(C * in.element_size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t y = 0; y < Y; ++y)
      for (int64_t x = 0; x < X; ++x) {
        if (same_dtype) {
          std::memcpy(out.element_ptr(element_offset(out, b, y, x, 0)), in.element_ptr(element_offset(in, b, x, y, 0)),
                      row_bytes);
          continue;
        }
        for (int64_t c = 0; c < C; ++c) set(out, get(in, b, x, y, c), b, y, x, c);
      }
}

fk_status transpose_tokens_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_transpose_tokens(a, DeviceType::cpu);
    transpose_tokens_reference(a);
  });
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  return Json{{"batch", a.input.shape[0]},    {"x", a.input.shape[1]},
              {"y", a.input.shape[2]},        {"channels", a.input.shape[3]},
              {"dtype", std::string(dtype_name(a.input.dtype))}};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "dit";
  d.level = "L1";
  d.summary = "out[b, y, x, :] = input[b, x, y, :], a copy: an axial DiT's tokens between frame-major and "
              "position-major order (Oasis' spatial and temporal attention)";
  d.args_size = sizeof(A);
  // input may be a view (a slice of a packed qkv: any batch stride; its other strides are
  // free too, which the op tests check by hand); out is written contiguous.
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out)},
                   {"input", ArgRole::in, offsetof(A, input), RowStride::any}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const int64_t B = wl_int(w, "batch", 1), X = wl_int(w, "x"), Y = wl_int(w, "y"), C = wl_int(w, "channels");
    const DType dt = wl_dtype(w);
    FK_CHECK(B >= 0 && X >= 0 && Y >= 0 && C >= 0, A::kName, " workload needs non-negative batch, x, y and channels, got ",
             w.dump());
    OpCase c = begin_case<A>(w, 2);
    c.tensors[0] = Tensor::empty({B, Y, X, C}, dt);
    c.tensors[1] = random_tensor({B, X, Y, C}, dt, seed, 1, -4.f, 4.f);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    // Each element read once and written once; no arithmetic.
    return OpCost{static_cast<double>(a.input.nbytes() + a.out.nbytes()), 0.0, DType::f32};
  };
  // A copy: any difference from the input's value is wrong.
  d.tolerance = [](const OpCase&, const TensorArg&, DType) { return Tolerance{0, 0}; };
  using J = Json;
  d.test_workloads = {
      J{{"batch", 2}, {"x", 3}, {"y", 5}, {"channels", 16}},                   // 16-byte vectors
      J{{"batch", 1}, {"x", 4}, {"y", 6}, {"channels", 64}, {"dtype", "f16"}},
      J{{"batch", 1}, {"x", 1}, {"y", 7}, {"channels", 24}},                   // one frame: a plain copy
      J{{"batch", 2}, {"x", 6}, {"y", 1}, {"channels", 8}, {"dtype", "f32"}},  // one position
      J{{"batch", 3}, {"x", 4}, {"y", 5}, {"channels", 1}, {"dtype", "f32"}},  // one channel
      J{{"batch", 1}, {"x", 5}, {"y", 3}, {"channels", 13}},                   // odd rows: element copies
      J{{"batch", 2}, {"x", 3}, {"y", 4}, {"channels", 6}, {"dtype", "f32"}},  // 24-byte rows: 8-byte words
      J{{"batch", 1}, {"x", 7}, {"y", 9}, {"channels", 2}, {"dtype", "f16"}},  // 4-byte rows
      J{{"batch", 1}, {"x", 2}, {"y", 3}, {"channels", 3072}},                 // Oasis' qkv width
      J{{"batch", 1}, {"x", 3}, {"y", 2}, {"channels", 5000}, {"dtype", "f32"}},  // rows over many loop turns
      J{{"batch", 0}, {"x", 4}, {"y", 4}, {"channels", 8}},                    // nothing to do
      J{{"batch", 1}, {"x", 3}, {"y", 0}, {"channels", 8}},
  };
  // Oasis-500m (hidden 1024, an 18x32 latent in 2x2 patches: 144 positions a frame) at 1, 16
  // and 32 frames: the hidden state (1024 channels) or its qkv (3072) into position-major
  // order for the temporal attention, and the attention output back to frame-major.
  for (int64_t t : {1, 16, 32})
    for (int64_t ch : {3072, 1024}) d.bench_workloads.push_back({{"batch", 1}, {"x", t}, {"y", 144}, {"channels", ch}});
  for (int64_t t : {16, 32}) d.bench_workloads.push_back({{"batch", 1}, {"x", 144}, {"y", t}, {"channels", 1024}});
  d.workload_from_call = workload_from_call;
  d.architectures = {"oasis"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("transpose_tokens", cpu, transpose_tokens_cpu);

}  // namespace
}  // namespace fk::ops
