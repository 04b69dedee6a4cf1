// expect: PASSED
// An honest grn on the CPU in float (ConvNeXt V2's Global Response Normalization): each
// channel's image-wide L2 norm over the mean norm scales it; gamma, beta and the input added.
#include <cmath>
#include <cstring>

#include "fk/dtype_convert.h"
#include "fk/ops/conv.h"

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

// The element at (n, h, w, c) of an NHWC view.
const char* at(const fk::TensorView& v, int64_t n, int64_t h, int64_t w, int64_t c) {
  return static_cast<const char*>(v.data) +
         (n * v.strides[0] + h * v.strides[1] + w * v.strides[2] + c) * v.element_size();
}

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::GrnArgs*>(raw);
  const int64_t N = a.input.shape[0], H = a.input.shape[1], W = a.input.shape[2], C = a.input.shape[3];
  const fk::DType t = a.input.dtype;
  for (int64_t n = 0; n < N; ++n) {
    float* scale = static_cast<float*>(a.scale.data) + n * a.scale.strides[0];
    float mean = 0;
    for (int64_t c = 0; c < C; ++c) {
      float s = 0;
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          const float x = load(t, at(a.input, n, h, w, c));
          s += x * x;
        }
      scale[c] = std::sqrt(s);
      mean += scale[c] / static_cast<float>(C);
    }
    for (int64_t c = 0; c < C; ++c) scale[c] /= mean + 1e-6f;
    for (int64_t c = 0; c < C; ++c) {
      const float g = load(t, static_cast<const char*>(a.gamma.data) + c * a.gamma.element_size());
      const float b = load(t, static_cast<const char*>(a.beta.data) + c * a.beta.element_size());
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          const float x = load(t, at(a.input, n, h, w, c));
          store(t, const_cast<char*>(at(a.out, n, h, w, c)), g * (x * scale[c]) + b + x);
        }
    }
  }
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(grn, run)
