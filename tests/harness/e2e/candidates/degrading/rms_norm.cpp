// expect: PASSED
// rms_norm that is right on every shape of the op-level task (hidden 256, 1024, 5120, 300)
// and wrong on the tiny engine's hidden size 64: it forgets the weight there. The op-level
// checks pass it; only the end-to-end evaluation sees the model's outputs change.
#include <cmath>
#include <cstring>

#include "fk/dtype_convert.h"
#include "fk/ops/norm.h"

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
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  const int64_t T = a.input.shape[0], H = a.input.shape[1], es = a.input.element_size();
  const bool skip_weight = H == 64;
  for (int64_t t = 0; t < T; ++t) {
    const char* x = static_cast<const char*>(a.input.data) + t * a.input.strides[0] * es;
    char* y = static_cast<char*>(a.out.data) + t * a.out.strides[0] * es;
    double ss = 0;
    for (int64_t h = 0; h < H; ++h) ss += static_cast<double>(load(a.input.dtype, x + h * es)) * load(a.input.dtype, x + h * es);
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(H) + a.eps));
    for (int64_t h = 0; h < H; ++h) {
      const float w = skip_weight ? 1.0f : load(a.weight.dtype, static_cast<const char*>(a.weight.data) + h * es);
      store(a.out.dtype, y + h * es, load(a.input.dtype, x + h * es) * inv * w);
    }
  }
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
