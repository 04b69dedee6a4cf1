// Counting the elements of one buffer outside a tolerance of another of the same dtype,
// where both live. The harness compares every timed output with the baseline's output on
// the same inputs; copying outputs of hundreds of megabytes to the host for that costs many
// times the kernel, so on a CUDA device the count runs there and only a failing
// comparison is copied back to be described (compare_output).
//
// The rule is compare_output's: a finite reference r is met by a finite x with
// |x - r| <= atol + rtol |r|; a NaN reference by a NaN, an infinite one by the same
// infinity. Integer dtypes compare exactly.
#pragma once
#include <cstdint>

#include "fk/op_registry.h"

namespace fk::bench {

// Elements i < n where x[i] is outside the tolerance of ref[i]; both contiguous, of
// `dtype`, on `device`. On a CUDA device the count runs on `stream` and the call waits
// for it (only that stream).
int64_t count_outside_tolerance(const void* x, const void* ref, int64_t n, DType dtype, Tolerance tol,
                                Device device, void* stream);

namespace detail {
// The host count (also what builds without CUDA use).
int64_t count_outside_tolerance_host(const void* x, const void* ref, int64_t n, DType dtype, Tolerance tol);
}  // namespace detail

}  // namespace fk::bench
