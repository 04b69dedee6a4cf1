// expect: INCORRECT
// A leaky relu (negative inputs scaled by 0.1 instead of zeroed), on the CPU: every value of
// DLRM's MLPs is finite and plausible, but the logits are not the baseline's.
#include <cstring>

#include "fk/dtype_convert.h"
#include "fk/ops/activation.h"

namespace {

float load(fk::DType t, const void* p) {
  if (t == fk::DType::f32) return *static_cast<const float*>(p);
  uint16_t b;
  std::memcpy(&b, p, 2);
  return t == fk::DType::bf16 ? fk::bf16_to_float(b) : fk::f16_to_float(b);
}
void store(fk::DType t, void* p, float x) {
  if (t == fk::DType::f32) {
    std::memcpy(p, &x, 4);
    return;
  }
  const uint16_t b = t == fk::DType::bf16 ? fk::float_to_bf16(x) : fk::float_to_f16(x);
  std::memcpy(p, &b, 2);
}

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::ReluArgs*>(raw);
  const int64_t T = a.input.shape[0], H = a.input.shape[1], es = a.input.element_size();
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const float x = load(a.input.dtype, static_cast<const char*>(a.input.data) + (t * a.input.strides[0] + h) * es);
      store(a.out.dtype, static_cast<char*>(a.out.data) + (t * a.out.strides[0] + h) * es, x > 0 ? x : 0.1f * x);
    }
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(relu, run)
