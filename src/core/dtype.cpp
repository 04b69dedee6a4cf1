#include "fk/dtype.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace fk {

namespace {
struct DTypeNames {
  DType type;
  std::string_view canonical;
  std::string_view safetensors;
  std::string_view torch;
};
constexpr std::array<DTypeNames, kNumDTypes> kNames{{
    {DType::f32, "f32", "F32", "float32"},
    {DType::f16, "f16", "F16", "float16"},
    {DType::bf16, "bf16", "BF16", "bfloat16"},
    {DType::f8e4m3fn, "f8e4m3fn", "F8_E4M3", "float8_e4m3fn"},
    {DType::f8e5m2, "f8e5m2", "F8_E5M2", "float8_e5m2"},
    {DType::i8, "i8", "I8", "int8"},
    {DType::u8, "u8", "U8", "uint8"},
    {DType::i32, "i32", "I32", "int32"},
    {DType::i64, "i64", "I64", "int64"},
    {DType::boolean, "bool", "BOOL", "bool"},
    {DType::f64, "f64", "F64", "float64"},
}};
}  // namespace

std::string_view dtype_name(DType t) {
  for (const auto& n : kNames)
    if (n.type == t) return n.canonical;
  return "invalid";
}

std::string_view dtype_safetensors_name(DType t) {
  for (const auto& n : kNames)
    if (n.type == t) return n.safetensors;
  return "invalid";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& n : kNames)
    if (name == n.canonical || name == n.safetensors || name == n.torch) return n.type;
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "half" || lower == "fp16") return DType::f16;
  if (lower == "float" || lower == "fp32") return DType::f32;
  if (lower == "bfloat16" || lower == "bf16") return DType::bf16;
  if (lower == "fp8" || lower == "fp8_e4m3" || lower == "e4m3") return DType::f8e4m3fn;
  if (lower == "fp8_e5m2" || lower == "e5m2") return DType::f8e5m2;
  return std::nullopt;
}

}  // namespace fk
