// Element types. DType crosses the candidate ABI inside TensorView, so its values are
// fixed forever: append new types, never renumber.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace fk {

enum class DType : uint8_t {
  f32 = 0,
  f16 = 1,
  bf16 = 2,
  f8e4m3fn = 3,  // OCP E4M3, finite-only: 0x7f/0xff are NaN, max 448
  f8e5m2 = 4,    // OCP E5M2, IEEE-like: has Inf and NaN, max 57344
  i8 = 5,
  u8 = 6,
  i32 = 7,
  i64 = 8,
  boolean = 9,
  f64 = 10,  // not an engine dtype: the oracle writes its outputs in f64
};

inline constexpr int kNumDTypes = 11;

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::f8e4m3fn: return 1;
    case DType::f8e5m2: return 1;
    case DType::i8: return 1;
    case DType::u8: return 1;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::boolean: return 1;
    case DType::f64: return 8;
  }
  return 0;
}

constexpr bool dtype_is_float(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f8e4m3fn ||
         t == DType::f8e5m2 || t == DType::f64;
}

constexpr bool dtype_is_valid(DType t) { return static_cast<uint8_t>(t) < kNumDTypes; }

// Short canonical name: "f32", "bf16", "f8e4m3fn", ...
std::string_view dtype_name(DType t);
// Accepts canonical names, PyTorch-style names ("bfloat16", "float16", "float8_e4m3fn")
// and safetensors names ("BF16", "F8_E4M3", ...).
std::optional<DType> dtype_from_name(std::string_view name);
// The safetensors header name ("BF16", "F8_E4M3", ...).
std::string_view dtype_safetensors_name(DType t);

}  // namespace fk
