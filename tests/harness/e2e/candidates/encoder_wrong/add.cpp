// expect: INCORRECT
// add that drops b on rows of 128 (tiny-bge-m3's hidden size): the token-type embedding never
// joins the word embedding, and the encoder's outputs move.
#include <cstring>

#include "fk/dtype_convert.h"
#include "fk/ops/elementwise.h"

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
  const auto& a = *static_cast<const fk::ops::AddArgs*>(raw);
  const int64_t T = a.a.shape[0], H = a.a.shape[1], es = a.a.element_size();
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const char* x = static_cast<const char*>(a.a.data) + (t * a.a.strides[0] + h) * es;
      const char* y = static_cast<const char*>(a.b.data) + (t * a.b.strides[0] + h) * es;
      store(a.out.dtype, static_cast<char*>(a.out.data) + (t * a.out.strides[0] + h) * es,
            load(a.a.dtype, x) + (H == 128 ? 0.f : load(a.b.dtype, y)));
    }
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(add, run)
