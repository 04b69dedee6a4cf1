// One element of each Philox fill (fk/random.h), as host/device code: the host loops in
// random.cpp and the kernels in cuda/random.cu call exactly these functions, so both write
// the same bits. Each function takes the Philox block of the element and its lane.
#pragma once
#include <cmath>
#include <cstdint>

#include "fk/dtype.h"
#include "fk/dtype_convert.h"
#include "fk/philox.h"
#include "fk/reproducible_math.h"
#include "fk/tensor_view.h"

namespace fk::detail {

// Parameters of the fills, precomputed on the host (identical inputs on both sides).
struct UniformParams {
  float lo;
  float range;  // hi - lo, rounded to float once on the host
};
struct NormalParams {
  float mean;
  float std;
};

FK_HD inline bool is_integer_dtype(DType t) { return !dtype_is_float(t); }

// Float -> integer dtype for values that are already integral: saturates to the dtype's
// range (exact otherwise). boolean is v != 0.
template <class I>
FK_HD inline I saturate_to(float v, float lo_bound, float hi_bound_exclusive, I lo, I hi) {
  if (v < lo_bound) return lo;
  if (v >= hi_bound_exclusive) return hi;
  return static_cast<I>(v);
}

// Stores a float sample into element i of a contiguous tensor of dtype t. Floats round
// with fk's conversions (fp8: satfinite); integer dtypes take v as an integral float.
FK_HD inline void store_float_sample(void* data, int64_t i, DType t, float v) {
  switch (t) {
    case DType::f32: static_cast<float*>(data)[i] = v; return;
    case DType::f64: static_cast<double*>(data)[i] = static_cast<double>(v); return;
    case DType::f16: static_cast<uint16_t*>(data)[i] = float_to_f16(v); return;
    case DType::bf16: static_cast<uint16_t*>(data)[i] = float_to_bf16(v); return;
    case DType::f8e4m3fn: static_cast<uint8_t*>(data)[i] = float_to_f8e4m3fn(v); return;
    case DType::f8e5m2: static_cast<uint8_t*>(data)[i] = float_to_f8e5m2(v); return;
    case DType::i8: static_cast<int8_t*>(data)[i] = saturate_to<int8_t>(v, -128.0f, 128.0f, -128, 127); return;
    case DType::u8: static_cast<uint8_t*>(data)[i] = saturate_to<uint8_t>(v, 0.0f, 256.0f, 0, 255); return;
    case DType::boolean: static_cast<uint8_t*>(data)[i] = v != 0.0f ? 1 : 0; return;
    case DType::i32:
      static_cast<int32_t*>(data)[i] = saturate_to<int32_t>(v, -0x1p31f, 0x1p31f, INT32_MIN, INT32_MAX);
      return;
    case DType::i64:
      static_cast<int64_t*>(data)[i] = saturate_to<int64_t>(v, -0x1p63f, 0x1p63f, INT64_MIN, INT64_MAX);
      return;
  }
}

// Stores an integer sample. Integer dtypes take it as is (the host checked the range fits);
// float dtypes round the value, through double, with fk's conversions.
FK_HD inline void store_int_sample(void* data, int64_t i, DType t, int64_t v) {
  const double d = static_cast<double>(v);  // exact below 2^53, else round to nearest even
  switch (t) {
    case DType::f32: static_cast<float*>(data)[i] = static_cast<float>(d); return;
    case DType::f64: static_cast<double*>(data)[i] = d; return;
    case DType::f16: static_cast<uint16_t*>(data)[i] = double_to_f16(d); return;
    case DType::bf16: static_cast<uint16_t*>(data)[i] = double_to_bf16(d); return;
    case DType::f8e4m3fn: static_cast<uint8_t*>(data)[i] = double_to_f8e4m3fn(d); return;
    case DType::f8e5m2: static_cast<uint8_t*>(data)[i] = double_to_f8e5m2(d); return;
    case DType::i8: static_cast<int8_t*>(data)[i] = static_cast<int8_t>(v); return;
    case DType::u8: static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(v); return;
    case DType::boolean: static_cast<uint8_t*>(data)[i] = v != 0 ? 1 : 0; return;
    case DType::i32: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(v); return;
    case DType::i64: static_cast<int64_t*>(data)[i] = v; return;
  }
}

FK_HD inline float floor_float(float v) {
#ifdef __CUDA_ARCH__
  return floorf(v);
#else
  return std::floor(v);
#endif
}
// Round to nearest integer, ties to even (exact on both sides).
FK_HD inline float round_even_float(float v) {
#ifdef __CUDA_ARCH__
  return rintf(v);
#else
  return std::nearbyint(v);  // default rounding mode: to nearest, ties to even
#endif
}

// Element (block, lane) of fill_uniform: fma(range, u, lo); floor for integer dtypes.
FK_HD inline void uniform_element(void* data, int64_t i, DType t, const PhiloxBlock& b, unsigned lane,
                                  UniformParams p) {
  float v = rmath::fma(p.range, u32_to_unit_float(b.v[lane]), p.lo);
  if (is_integer_dtype(t)) v = floor_float(v);
  store_float_sample(data, i, t, v);
}

// Element of fill_normal: fma(std, z, mean); integer dtypes round to nearest (even) and
// saturate.
FK_HD inline void normal_element(void* data, int64_t i, DType t, const PhiloxBlock& b, unsigned lane,
                                 NormalParams p) {
  float v = rmath::fma(p.std, normal_from_block(b, lane), p.mean);
  if (is_integer_dtype(t)) v = round_even_float(v);
  store_float_sample(data, i, t, v);
}

FK_HD inline void int_element(void* data, int64_t i, DType t, const PhiloxBlock& b, unsigned lane, int64_t lo,
                              int64_t hi) {
  store_int_sample(data, i, t, u32_to_int(b.v[lane], lo, hi));
}

}  // namespace fk::detail
