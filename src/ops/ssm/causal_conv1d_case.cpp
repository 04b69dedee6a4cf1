#include "ops/ssm/causal_conv1d_case.h"

#include <algorithm>
#include <numeric>

#include "fk/element.h"
#include "fk/philox.h"
#include "fk/runtime.h"
#include "ops/common/case_builder.h"
#include "ops/common/validate.h"

namespace fk::ops::conv_case {

ConvShape conv_shape(const Json& w, const char* op) {
  ConvShape s{wl_int(w, "dim"), wl_int(w, "width", 4), wl_dtype(w), wl_bool(w, "bias", false),
              wl_bool(w, "silu", true), wl_int(w, "extra_slots", 2), {}};
  if (w.contains("padding")) s.padding = wl_int_list(w, "padding");
  FK_CHECK(s.dim > 0 && s.width >= 2 && s.width <= 4 && s.extra_slots >= 0, op,
           " workload needs dim > 0, 2 <= width <= 4 and extra_slots >= 0, got ", w.dump());
  FK_CHECK(s.dtype == DType::f32 || s.dtype == DType::f16 || s.dtype == DType::bf16, op,
           " workload dtype must be f32, f16 or bf16, got ", w.dump());
  return s;
}

Tensor conv_weight(const ConvShape& s, uint64_t seed) {
  return random_tensor({s.dim, s.width}, s.dtype, seed, kStreamWeight, -1.f, 1.f);
}

Tensor conv_bias_or_absent(const ConvShape& s, uint64_t seed) {
  return s.bias ? random_tensor({s.dim}, s.dtype, seed, kStreamBias, -0.5f, 0.5f) : absent_tensor(s.dtype);
}

Tensor conv_state_pool(const ConvShape& s, int64_t batch, uint64_t seed) {
  return random_tensor({batch + s.extra_slots, s.dim, s.width - 1}, s.dtype, seed, kStreamState, -2.f, 2.f);
}

Tensor conv_state_indices(const ConvShape& s, int64_t batch, uint64_t seed) {
  const int64_t slots = batch + s.extra_slots;
  std::vector<int64_t> perm(static_cast<size_t>(slots));
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t i = slots - 1; i > 0; --i)
    std::swap(perm[static_cast<size_t>(i)],
              perm[static_cast<size_t>(philox_int(seed, kStreamSlots, static_cast<uint64_t>(i), 0, i + 1))]);
  perm.resize(static_cast<size_t>(batch));
  for (int64_t b : s.padding) {
    FK_CHECK(b >= 0 && b < batch, "conv workload: padding sequence ", b, " is not one of the ", batch, " sequences");
    perm[static_cast<size_t>(b)] = -1;
  }
  return i32_vector(perm);
}

Tensor i32_vector(const std::vector<int64_t>& v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::i32);
  std::transform(v.begin(), v.end(), t.data_as<int32_t>(), [](int64_t x) { return static_cast<int32_t>(x); });
  return t;
}

double conv_weight_and_state_bytes(const TensorView& weight, const TensorView& bias, const TensorView& conv_state,
                                   int64_t sequences) {
  const double slot_bytes = static_cast<double>(conv_state.shape[1] * conv_state.shape[2] * conv_state.element_size());
  return static_cast<double>(weight.nbytes()) + (arg_present(bias) ? static_cast<double>(bias.nbytes()) : 0.0) +
         2.0 * slot_bytes * static_cast<double>(sequences);
}

std::vector<int64_t> read_ints(const TensorView& v) {
  Tensor host = Tensor::empty({v.numel()}, v.dtype);
  rt::memcpy_sync(host.data(), Device::cpu(), v.data, v.device, host.nbytes());
  std::vector<int64_t> out(static_cast<size_t>(v.numel()));
  for (int64_t i = 0; i < v.numel(); ++i) out[static_cast<size_t>(i)] = get_index(host.view(), i);
  return out;
}

}  // namespace fk::ops::conv_case
