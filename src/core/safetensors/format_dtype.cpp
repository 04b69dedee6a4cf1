// The dtype names the safetensors format defines, their widths, and the fastkernels type
// each maps to (where there is one).
#include <array>

#include "core/safetensors/safetensors.h"

namespace fk::safetensors {

namespace {
const std::array<FormatDType, 20> kFormatDTypes{{
    {"BOOL", 8, DType::boolean},
    {"U8", 8, DType::u8},
    {"I8", 8, DType::i8},
    {"F8_E5M2", 8, DType::f8e5m2},
    {"F8_E4M3", 8, DType::f8e4m3fn},
    {"F8_E8M0", 8, std::nullopt},
    {"I16", 16, std::nullopt},
    {"U16", 16, std::nullopt},
    {"F16", 16, DType::f16},
    {"BF16", 16, DType::bf16},
    {"I32", 32, DType::i32},
    {"U32", 32, std::nullopt},
    {"F32", 32, DType::f32},
    {"F64", 64, DType::f64},
    {"I64", 64, DType::i64},
    {"U64", 64, std::nullopt},
    {"C64", 64, std::nullopt},
    {"F4", 4, std::nullopt},
    {"F6_E2M3", 6, std::nullopt},
    {"F6_E3M2", 6, std::nullopt},
}};
}  // namespace

std::optional<FormatDType> format_dtype(std::string_view name) {
  for (const FormatDType& d : kFormatDTypes)
    if (d.name == name) return d;
  return std::nullopt;
}

std::string format_dtype_names() {
  std::string names;
  for (const FormatDType& d : kFormatDTypes) {
    if (!names.empty()) names += ", ";
    names += d.name;
  }
  return names;
}

}  // namespace fk::safetensors
