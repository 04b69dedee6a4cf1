// Test and benchmark inputs: Philox streams (fk/philox.h) written into tensors. For a
// given (seed, offset) the host and device versions write bit-identical tensors, and
// element i depends only on (seed, offset, i) — not on the tensor's size or shape.
//
// The tensor must be contiguous (a strided view is an error, not a gather); any dtype.
// Float samples are rounded to the dtype with fk/dtype_convert.h (fp8: satfinite).
// `stream` is a cudaStream_t for CUDA tensors (ignored for host tensors; host fills are
// synchronous).
#pragma once
#include <cstdint>

#include "fk/tensor_view.h"

namespace fk {

// Element i = fmaf(hi - lo, philox_uniform(seed, offset, i), lo) in float, i.e. uniform in
// [lo, hi) (hi - lo is rounded to float first). Integer dtypes get the floor of that value;
// the whole possible range must fit the dtype (else an error).
void fill_uniform(const TensorView& t, uint64_t seed, uint64_t offset, float lo, float hi,
                  void* stream = nullptr);

// Element i = philox_int(seed, offset, i, lo, hi), uniform in [lo, hi); hi - lo in
// [1, 2^32]. Integer dtypes must hold all of [lo, hi) (else an error); float dtypes get the
// value rounded to nearest even (through double).
void fill_int(const TensorView& t, uint64_t seed, uint64_t offset, int64_t lo, int64_t hi,
              void* stream = nullptr);

// Element i = fmaf(std, philox_normal(seed, offset, i), mean) in float: normal with the
// given mean and standard deviation (tails cut at about 5.77 std by the 24-bit uniforms).
// Integer dtypes get the value rounded to nearest (ties to even), saturated to the dtype's
// range; boolean gets value != 0. mean and std must be finite, std >= 0.
void fill_normal(const TensorView& t, uint64_t seed, uint64_t offset, float mean, float std,
                 void* stream = nullptr);

}  // namespace fk
