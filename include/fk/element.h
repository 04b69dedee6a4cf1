// Reading and writing single elements of any dtype as double. This is what CPU
// references are written with: one reference function serves every input dtype, writes
// the engine's dtype when it is the CPU backend, and writes f64 when it is the oracle.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "fk/dtype_convert.h"
#include "fk/tensor_view.h"

namespace fk {

inline double load_element(const void* p, DType t) {
  switch (t) {
    case DType::f32: { float v; memcpy(&v, p, 4); return v; }
    case DType::f64: { double v; memcpy(&v, p, 8); return v; }
    case DType::f16: { uint16_t v; memcpy(&v, p, 2); return f16_to_float(v); }
    case DType::bf16: { uint16_t v; memcpy(&v, p, 2); return bf16_to_float(v); }
    case DType::f8e4m3fn: return f8e4m3fn_to_float(*static_cast<const uint8_t*>(p));
    case DType::f8e5m2: return f8e5m2_to_float(*static_cast<const uint8_t*>(p));
    case DType::i8: return *static_cast<const int8_t*>(p);
    case DType::u8: return *static_cast<const uint8_t*>(p);
    case DType::boolean: return *static_cast<const uint8_t*>(p) ? 1.0 : 0.0;
    case DType::i32: { int32_t v; memcpy(&v, p, 4); return v; }
    case DType::i64: { int64_t v; memcpy(&v, p, 8); return static_cast<double>(v); }
  }
  return NAN;
}

// Narrow float types round once, directly from the double (fk/dtype_convert.h: the same
// results as CUDA's __double2half / __double2bfloat16 / __nv_cvt_double_to_fp8 with
// __NV_SATFINITE). Going through float first would round twice.
inline void store_element(void* p, DType t, double x) {
  switch (t) {
    case DType::f32: { float v = static_cast<float>(x); memcpy(p, &v, 4); return; }
    case DType::f64: memcpy(p, &x, 8); return;
    case DType::f16: { uint16_t v = double_to_f16(x); memcpy(p, &v, 2); return; }
    case DType::bf16: { uint16_t v = double_to_bf16(x); memcpy(p, &v, 2); return; }
    case DType::f8e4m3fn: *static_cast<uint8_t*>(p) = double_to_f8e4m3fn(x); return;
    case DType::f8e5m2: *static_cast<uint8_t*>(p) = double_to_f8e5m2(x); return;
    case DType::i8: *static_cast<int8_t*>(p) = static_cast<int8_t>(x); return;
    case DType::u8: *static_cast<uint8_t*>(p) = static_cast<uint8_t>(x); return;
    case DType::boolean: *static_cast<uint8_t*>(p) = x != 0.0; return;
    case DType::i32: { int32_t v = static_cast<int32_t>(x); memcpy(p, &v, 4); return; }
    case DType::i64: { int64_t v = static_cast<int64_t>(x); memcpy(p, &v, 8); return; }
  }
}

// Integer element access without a detour through double (exact for all of int64).
inline int64_t load_index(const void* p, DType t) {
  switch (t) {
    case DType::i32: { int32_t v; memcpy(&v, p, 4); return v; }
    case DType::i64: { int64_t v; memcpy(&v, p, 8); return v; }
    case DType::i8: return *static_cast<const int8_t*>(p);
    case DType::u8: case DType::boolean: return *static_cast<const uint8_t*>(p);
    default: return static_cast<int64_t>(load_element(p, t));
  }
}

// Accessors by multi-index for host tensors: at(view, i, j) -> double.
template <class... I>
inline int64_t element_offset(const TensorView& v, I... idx) {
  const int64_t ii[] = {static_cast<int64_t>(idx)...};
  int64_t o = 0;
  for (size_t d = 0; d < sizeof...(I); ++d) o += ii[d] * v.strides[d];
  return o;
}
template <class... I>
inline double get(const TensorView& v, I... idx) {
  return load_element(v.element_ptr(element_offset(v, idx...)), v.dtype);
}
template <class... I>
inline void set(const TensorView& v, double x, I... idx) {
  store_element(v.element_ptr(element_offset(v, idx...)), v.dtype, x);
}
template <class... I>
inline int64_t get_index(const TensorView& v, I... idx) {
  return load_index(v.element_ptr(element_offset(v, idx...)), v.dtype);
}

}  // namespace fk
