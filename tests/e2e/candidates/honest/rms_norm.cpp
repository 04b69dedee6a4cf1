// The honest CPU rms_norm of tests/adversarial/cpu: float math with double
// accumulation. Inside the engine it must agree with the baseline token for token.
#include <cmath>
#include <cstring>

#include "fk/dtype_convert.h"
#include "fk/ops/norm.h"

namespace {

float load(const fk::TensorView& v, const void* p) {
  if (v.dtype == fk::DType::f32) return *static_cast<const float*>(p);
  uint16_t b;
  std::memcpy(&b, p, 2);
  return v.dtype == fk::DType::bf16 ? fk::bf16_to_float(b) : fk::f16_to_float(b);
}
void store(const fk::TensorView& v, void* p, float x) {
  if (v.dtype == fk::DType::f32) {
    *static_cast<float*>(p) = x;
    return;
  }
  const uint16_t b = v.dtype == fk::DType::bf16 ? fk::float_to_bf16(x) : fk::float_to_f16(x);
  std::memcpy(p, &b, 2);
}

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  const int64_t T = a.input.shape[0], H = a.input.shape[1], es = a.input.element_size();
  for (int64_t t = 0; t < T; ++t) {
    const char* x = static_cast<const char*>(a.input.data) + t * a.input.strides[0] * es;
    char* y = static_cast<char*>(a.out.data) + t * a.out.strides[0] * es;
    double ss = 0;  // double accumulation keeps the error at the baseline's level
    for (int64_t h = 0; h < H; ++h) {
      const double f = load(a.input, x + h * es);
      ss += f * f;
    }
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(H) + a.eps));
    for (int64_t h = 0; h < H; ++h)
      store(a.out, y + h * es, load(a.input, x + h * es) * inv * load(a.weight, static_cast<const char*>(a.weight.data) + h * es));
  }
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
