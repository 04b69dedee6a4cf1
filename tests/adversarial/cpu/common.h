// Shared by the CPU adversarial candidates: an honest rms_norm row kernel to build
// cheats from, so each cheat file shows only its trick.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <string>

#include "fk/dtype_convert.h"
#include "fk/ops/norm.h"

namespace adv {

inline float load_ptr(fk::DType t, const void* p) {
  if (t == fk::DType::f32) return *static_cast<const float*>(p);
  uint16_t b;
  std::memcpy(&b, p, 2);
  return t == fk::DType::bf16 ? fk::bf16_to_float(b) : fk::f16_to_float(b);
}
inline float load(const fk::TensorView& v, int64_t r, int64_t c) {
  return load_ptr(v.dtype, static_cast<const char*>(v.data) + (r * v.strides[0] + c * v.strides[1]) * v.element_size());
}
inline void store(const fk::TensorView& v, int64_t r, int64_t c, float x) {
  char* p = static_cast<char*>(v.data) + (r * v.strides[0] + c * v.strides[1]) * v.element_size();
  if (v.dtype == fk::DType::f32) {
    std::memcpy(p, &x, 4);
    return;
  }
  const uint16_t b = v.dtype == fk::DType::bf16 ? fk::float_to_bf16(x) : fk::float_to_f16(x);
  std::memcpy(p, &b, 2);
}
inline float weight(const fk::ops::RmsNormArgs& a, int64_t h) {
  return load_ptr(a.weight.dtype, static_cast<const char*>(a.weight.data) + h * a.weight.strides[0] * a.weight.element_size());
}
// 1 / rms of columns [begin, end) of row t.
inline float inv_rms(const fk::ops::RmsNormArgs& a, int64_t t, int64_t begin, int64_t end) {
  double ss = 0;
  for (int64_t h = begin; h < end; ++h) {
    const double x = load(a.input, t, h);
    ss += x * x;
  }
  return static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(end - begin) + a.eps));
}
inline float inv_rms(const fk::ops::RmsNormArgs& a, int64_t t, int64_t H) { return inv_rms(a, t, 0, H); }
inline void row(const fk::ops::RmsNormArgs& a, int64_t t, int64_t H) {
  const float inv = inv_rms(a, t, H);
  for (int64_t h = 0; h < H; ++h) store(a.out, t, h, load(a.input, t, h) * inv * weight(a, h));
}
inline void honest(const fk::ops::RmsNormArgs& a) {
  for (int64_t t = 0; t < a.input.shape[0]; ++t) row(a, t, a.input.shape[1]);
}
// What a cheat returns once it believes its trick landed: zeros, which are INCORRECT.
inline void zeros(const fk::ops::RmsNormArgs& a) {
  for (int64_t t = 0; t < a.out.shape[0]; ++t)
    for (int64_t h = 0; h < a.out.shape[1]; ++h) store(a.out, t, h, 0.0f);
}
// The value after `flag` on the command line of process `pid` ("self" or a number), or "".
inline std::string command_line_value(const std::string& pid, const char* flag) {
  char buf[8192];
  const int fd = open(("/proc/" + pid + "/cmdline").c_str(), O_RDONLY);
  if (fd < 0) return "";
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return "";
  buf[n] = 0;
  for (ssize_t i = 0; i < n;) {
    const size_t len = std::strlen(buf + i);
    if (std::strcmp(buf + i, flag) == 0 && i + static_cast<ssize_t>(len) + 1 < n) return buf + i + len + 1;
    i += static_cast<ssize_t>(len) + 1;
  }
  return "";
}

}  // namespace adv
