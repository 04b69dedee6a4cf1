// expect: INCORRECT
// A global_avg_pool that leaves out the image's last pixel (a loop bound off by one) but
// still divides by every pixel, on the CPU: every value is plausible, but the logits are not
// the baseline's.
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

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::GlobalAvgPoolArgs*>(raw);
  const int64_t N = a.input.shape[0], H = a.input.shape[1], W = a.input.shape[2], C = a.input.shape[3];
  const int64_t es = a.input.element_size();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      double s = 0;
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < (h == H - 1 ? W - 1 : W); ++w)
          s += load(a.input.dtype, static_cast<const char*>(a.input.data) +
                                       (n * a.input.strides[0] + h * a.input.strides[1] + w * a.input.strides[2] + c) *
                                           es);
      store(a.out.dtype, static_cast<char*>(a.out.data) + (n * a.out.strides[0] + c) * es,
            static_cast<float>(s / static_cast<double>(H * W)));
    }
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(global_avg_pool, run)
