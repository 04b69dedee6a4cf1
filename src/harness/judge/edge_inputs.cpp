#include "harness/judge/edge_inputs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "fk/element.h"
#include "fk/philox.h"
#include "fk/status.h"

namespace fk::bench {

namespace {

// Philox offsets of the secret draws, one stream per purpose and argument.
constexpr uint64_t kRowChoice = 1 << 12, kRowPosition = 2 << 12, kElementPosition = 3 << 12;

bool reads(ArgRole r) { return r == ArgRole::in || r == ArgRole::inout; }

// A float tensor the op reads on its backend's device (the host case holds it on the CPU).
bool float_read_argument(const TensorArg& arg, const Tensor& t) {
  return reads(arg.role) && !arg.host_only && t.defined() && dtype_is_float(t.dtype()) && t.device().is_cpu() &&
         t.view().is_contiguous();
}

// A secret index in [0, n) (Philox draws span at most 2^32 values).
int64_t secret_index(uint64_t secret, uint64_t offset, uint64_t i, int64_t n) {
  return philox_int(secret, offset, i, 0, std::min<int64_t>(n, int64_t{1} << 32));
}

double value(const Tensor& t, int64_t i) { return load_element(t.view().element_ptr(i), t.dtype()); }
void store(const Tensor& t, int64_t i, double v) { store_element(t.view().element_ptr(i), t.dtype(), v); }

// The largest finite magnitude in the tensor (0 when none): scales the magnitude patterns
// so that each element keeps its rank within the row.
double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i)
    if (const double v = value(t, i); std::isfinite(v)) m = std::max(m, std::fabs(v));
  return m;
}

// The smallest positive subnormal of a float dtype.
double smallest_subnormal(DType t) {
  switch (t) {
    case DType::f64: return std::numeric_limits<double>::denorm_min();
    case DType::f32: return std::numeric_limits<float>::denorm_min();
    case DType::bf16: return std::ldexp(1.0, -133);
    case DType::f16: return std::ldexp(1.0, -24);
    case DType::f8e4m3fn: return std::ldexp(1.0, -9);
    case DType::f8e5m2: return std::ldexp(1.0, -16);
    default: FK_FAIL(FK_ERR_INVALID_ARGUMENT, "no subnormals for integer dtype ", dtype_name(t));
  }
}

// A patterned row's value at column `col`: orig is the drawn value there, frac its
// magnitude relative to the tensor's largest, hot the one-hot column.
double patterned(EdgePattern p, const EdgeMagnitudes& m, double sub, double orig, double frac, int64_t col,
                 int64_t hot, double constant) {
  const double sign = std::signbit(orig) ? -1.0 : 1.0;
  switch (p) {
    case EdgePattern::zero_rows: return 0.0;
    case EdgePattern::constant_rows: return constant;
    case EdgePattern::one_hot_rows: return col == hot ? 1.0 : 0.0;
    case EdgePattern::tiny: return sign * m.tiny * (1.0 + frac);
    case EdgePattern::huge: return sign * m.huge * (1.0 + frac) / 2.0;
    case EdgePattern::denormal: return sign * (sub + frac * (m.smallest_normal - 2.0 * sub));
  }
  return orig;
}

}  // namespace

std::string_view edge_pattern_name(EdgePattern p) {
  switch (p) {
    case EdgePattern::zero_rows: return "zero rows";
    case EdgePattern::constant_rows: return "constant rows";
    case EdgePattern::one_hot_rows: return "one-hot rows";
    case EdgePattern::tiny: return "tiny magnitudes";
    case EdgePattern::huge: return "huge magnitudes";
    case EdgePattern::denormal: return "denormal magnitudes";
  }
  return "?";
}

EdgeMagnitudes edge_magnitudes(DType t) {
  switch (t) {
    // 2^53 squared is 2^106; 2^20 such squares sum to 2^126, below the f32 maximum (2^128).
    case DType::f32:
    case DType::bf16: return {1e-30, std::ldexp(1.0, 53), static_cast<double>(std::numeric_limits<float>::min())};
    case DType::f64: return {1e-30, std::ldexp(1.0, 500), std::numeric_limits<double>::min()};
    // The largest power of two whose square the dtype still holds (max 65504, 448, 57344).
    case DType::f16: return {std::ldexp(1.0, -14), std::ldexp(1.0, 7), std::ldexp(1.0, -14)};
    case DType::f8e4m3fn: return {std::ldexp(1.0, -6), std::ldexp(1.0, 4), std::ldexp(1.0, -6)};
    case DType::f8e5m2: return {std::ldexp(1.0, -14), std::ldexp(1.0, 7), std::ldexp(1.0, -14)};
    default: FK_FAIL(FK_ERR_INVALID_ARGUMENT, "edge magnitudes are for float dtypes, got ", dtype_name(t));
  }
}

bool takes_row_patterns(const TensorArg& arg, const Tensor& t) {
  return float_read_argument(arg, t) && t.rank() >= 2 && t.numel() > 0;
}

bool takes_element_change(const TensorArg& arg, const Tensor& t) {
  return float_read_argument(arg, t) && t.numel() >= 2;
}

bool apply_edge_pattern(const OpDef& def, OpCase& host, EdgePattern p, uint64_t secret) {
  bool changed = false;
  for (size_t a = 0; a < def.tensor_args.size(); ++a) {
    const Tensor& t = host.tensors[a];
    if (!takes_row_patterns(def.tensor_args[a], t)) continue;
    const int64_t n = t.size(-1);
    if (n == 0) continue;
    const int64_t rows = t.numel() / n;
    const EdgeMagnitudes m = edge_magnitudes(t.dtype());
    const double sub = smallest_subnormal(t.dtype());
    const double largest = max_abs(t);
    // About half of the rows, a secret choice; at least one.
    std::vector<int64_t> chosen;
    for (int64_t r = 0; r < rows; ++r)
      if (philox_u32(secret, kRowChoice + a, static_cast<uint64_t>(r)) & 1u) chosen.push_back(r);
    if (chosen.empty()) chosen.push_back(secret_index(secret, kRowChoice + a, static_cast<uint64_t>(rows), rows));
    for (const int64_t r : chosen) {
      const int64_t hot = secret_index(secret, kRowPosition + a, static_cast<uint64_t>(2 * r), n);
      double constant = value(t, r * n + secret_index(secret, kRowPosition + a, static_cast<uint64_t>(2 * r + 1), n));
      if (!(std::isfinite(constant) && constant != 0.0)) constant = 0.5;
      for (int64_t c = 0; c < n; ++c) {
        const int64_t i = r * n + c;
        const double orig = value(t, i);
        const double frac = largest > 0 && std::isfinite(orig) ? std::fabs(orig) / largest : 0.0;
        store(t, i, patterned(p, m, sub, orig, frac, c, hot, constant));
      }
    }
    changed = true;
  }
  return changed;
}

bool change_one_element(const OpDef& def, OpCase& host, uint64_t secret) {
  bool changed = false;
  for (size_t a = 0; a < def.tensor_args.size(); ++a) {
    const Tensor& t = host.tensors[a];
    if (!takes_element_change(def.tensor_args[a], t)) continue;
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < t.numel(); ++i)
      if (const double v = value(t, i); std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    if (!(lo < hi)) continue;  // constant (or nothing finite): nothing to change it to
    const int64_t j = secret_index(secret, kElementPosition + a, 0, t.numel());
    const double v = value(t, j);
    store(t, j, std::isfinite(v) && v - lo > hi - v ? lo : hi);
    changed = true;
  }
  return changed;
}

}  // namespace fk::bench
