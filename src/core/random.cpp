#include "fk/random.h"

#include <cmath>

#include "fk/element.h"
#include "fk/philox.h"
#include "fk/status.h"
#include "core/random_device.h"

namespace fk {

void fill_uniform(const TensorView& t, uint64_t seed, uint64_t offset, float lo, float hi, void* stream) {
  FK_CHECK(t.is_contiguous(), "fill_uniform needs a contiguous tensor, got ", t.rank, "-d strided view");
  if (t.device.is_cuda()) return detail::fill_uniform_device(t, seed, offset, lo, hi, stream);
  const int64_t n = t.numel();
  const float range = hi - lo;
  for (int64_t i = 0; i < n; ++i) {
    float v = std::fmaf(range, philox_uniform(seed, offset, static_cast<uint64_t>(i)), lo);
    if (!dtype_is_float(t.dtype)) v = std::floor(v);
    store_element(t.element_ptr(i), t.dtype, v);
  }
}

void fill_int(const TensorView& t, uint64_t seed, uint64_t offset, int64_t lo, int64_t hi, void* stream) {
  FK_CHECK(t.is_contiguous(), "fill_int needs a contiguous tensor");
  FK_CHECK(hi > lo && static_cast<uint64_t>(hi - lo) <= (1ull << 32), "fill_int range [", lo, ", ", hi,
           ") must be non-empty and at most 2^32 wide");
  if (t.device.is_cuda()) return detail::fill_int_device(t, seed, offset, lo, hi, stream);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = philox_int(seed, offset, static_cast<uint64_t>(i), lo, hi);
    if (t.dtype == DType::i64) {
      *static_cast<int64_t*>(t.element_ptr(i)) = v;
    } else {
      store_element(t.element_ptr(i), t.dtype, static_cast<double>(v));
    }
  }
}

}  // namespace fk
