// Tolerance of the linear op against the f64 oracle, from the size of the dot products.
//
// Each output is a K-long dot product. Two errors reach it:
//  - rounding of the output to its dtype: relative to |out|, so the dtype's default rtol;
//  - accumulation rounding: absolute. With random-sign terms a partial sum after k steps
//    has size ~sqrt(k) * rms(term), and sqrt(K) * rms(term) is the typical |out| ("typical"
//    below). S roundings of unit roundoff eps on such partial sums random-walk to about
//    eps * sqrt(S) * typical. Outputs that cancel to near zero get no help from rtol, so
//    this term goes into atol:
//        atol = default atol + 4 * eps * sqrt(S) * typical
//    with typical = sqrt(K) * rms(input) * rms(weight) * scale_a * scale_b (measured on
//    the case's data) and 4 for the tail of the largest of M*N errors:
//      bf16/f16 input: fp32 accumulation, eps = 2^-24, S = K steps;
//      fp8 input: Hopper's fp8 tensor cores add each 32-deep product chunk with about 13
//        mantissa bits before results are promoted to fp32, eps = 2^-13, S = K / 32; this
//        also admits kernels that use fp8 "fast accumulation" (no periodic promotion).
//    The fp32 term is far below the default atol for any real K; the fp8 term is about
//    2e-3 * typical at K = 512 and 7e-3 * typical at K = 8192.
#pragma once
#include "fk/op_registry.h"
#include "fk/ops/linear.h"

namespace fk::ops {

// Root mean square of a host vector or [rows, cols] matrix (0 when empty).
double tensor_rms(const TensorView& v);

// Tolerance for `out` of dtype `out_dtype` for the host-side arguments `a`.
Tolerance linear_tolerance(const LinearArgs& a, DType out_dtype);

}  // namespace fk::ops
