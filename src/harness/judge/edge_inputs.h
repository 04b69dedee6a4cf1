// Inputs a uniform random draw never produces, for the harness's edge rounds: rows that
// are all zero, constant or one-hot, magnitudes near the bottom (tiny, denormal) and the
// top (huge) of the dtype's range, and a repeat of earlier inputs with one element
// changed. An RMS norm that drops its epsilon, a kernel that special-cases constant rows
// wrongly, or a cache keyed on a sample of the input bytes all pass random inputs and fail
// these.
//
// Which arguments take edge values is decided here, from the argument and its tensor
// alone (no per-op knowledge): float tensors the op reads (in / inout) that live on the
// device, of rank >= 2 for the row patterns. Index tensors, cache metadata and routing ids
// are integers, and per-request parameters (temperatures, scales) are rank 1, so they keep
// their drawn values. Where an op's contract still excludes a pattern (its exact result is
// not finite in the output dtype, say), the harness finds out from the baseline: a
// pattern the baseline does not get right against the oracle is not held against the
// candidate (evaluate.cpp).
#pragma once
#include <array>
#include <cstdint>
#include <string_view>

#include "fk/op_registry.h"

namespace fk::bench {

enum class EdgePattern : uint8_t {
  zero_rows,      // every element 0
  constant_rows,  // one nonzero value repeated
  one_hot_rows,   // 0 except a single 1
  tiny,           // magnitudes in [tiny, 2 tiny], signs kept (edge_magnitudes)
  huge,           // magnitudes in [huge / 2, huge], signs kept
  denormal,       // magnitudes below the dtype's smallest normal, signs kept
};
inline constexpr std::array<EdgePattern, 6> kEdgePatterns = {
    EdgePattern::zero_rows, EdgePattern::constant_rows, EdgePattern::one_hot_rows,
    EdgePattern::tiny,      EdgePattern::huge,          EdgePattern::denormal};
std::string_view edge_pattern_name(EdgePattern p);  // "zero rows", "tiny magnitudes", ...

// The magnitudes of a float dtype's patterns.
//   tiny: 1e-30 where the dtype's exponent range holds it (f32, bf16, f64), else the
//         smallest normal (f16, fp8): small enough that squares underflow in f32.
//   huge: as large as stays safe where squares and sums of squares are taken in f32
//         (sqrt(max) / 1024 for f32 and bf16, so 2^20 squares still sum below the f32
//         maximum), and for the narrow dtypes below sqrt of the dtype's own maximum, so a
//         product of two inputs still fits the dtype.
//   smallest_normal: the dtype's smallest positive normal; denormal values lie below it.
struct EdgeMagnitudes {
  double tiny = 0, huge = 0, smallest_normal = 0;
};
// Throws fk::Error for an integer dtype.
EdgeMagnitudes edge_magnitudes(DType t);

// Whether an argument takes the row patterns: a float in / inout tensor on the device
// (not host_only), contiguous, of rank >= 2 with at least one element.
bool takes_row_patterns(const TensorArg& arg, const Tensor& t);
// Whether an argument takes the one-element change: a float in / inout tensor on the
// device, contiguous, with at least two elements.
bool takes_element_change(const TensorArg& arg, const Tensor& t);

// Applies `p` to a secret subset (about half, at least one) of the rows (the last dim) of
// every argument of the host case that takes row patterns; the other rows keep their
// drawn values. `secret` decides the rows, the hot positions and the constants. Returns
// false (the case unchanged) when no argument takes row patterns.
bool apply_edge_pattern(const OpDef& def, OpCase& host, EdgePattern p, uint64_t secret);

// Changes one element, at a secret position, of every argument that takes the change: to
// the tensor's minimum or maximum, whichever is farther from the element's value (values
// the op already accepted in that tensor). Returns false when nothing could change (no
// such argument, or every one constant).
bool change_one_element(const OpDef& def, OpCase& host, uint64_t secret);

}  // namespace fk::bench
