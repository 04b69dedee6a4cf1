#include "fk/random.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "core/random_device.h"
#include "core/random_element.h"
#include "fk/philox.h"
#include "fk/status.h"
#include "fk/tensor.h"

namespace fk {
namespace {

// The checks every fill makes before touching memory.
void check_fillable(const TensorView& t, const char* fn) {
  FK_CHECK(dtype_is_valid(t.dtype), fn, ": invalid dtype ", static_cast<int>(t.dtype));
  FK_CHECK(t.rank >= 0 && t.rank <= kMaxRank, fn, ": invalid rank ", t.rank);
  FK_CHECK(t.is_contiguous(), fn, " needs a contiguous tensor, got ", describe(t), " with strides ",
           shape_to_string(t.strides, t.rank), " (fill a contiguous tensor and copy it into the view)");
  FK_CHECK(t.numel() == 0 || t.data != nullptr, fn, ": ", describe(t), " has no data pointer");
}

// Inclusive value range of an integer dtype (i64's max reads as 2^63 in double; its
// fills are never range-checked).
struct IntRange {
  double min, max;
};
IntRange integer_range(DType t) {
  switch (t) {
    case DType::i8: return {-128.0, 127.0};
    case DType::u8: return {0.0, 255.0};
    case DType::boolean: return {0.0, 1.0};
    case DType::i32: return {-2147483648.0, 2147483647.0};
    default: return {-9223372036854775808.0, 9223372036854775807.0};  // i64; max rounds to 2^63
  }
}

// Runs fn(first_block, end_block) over the Philox blocks of n elements, split across
// threads for large tensors (elements are independent, so the split changes nothing).
template <class F>
void for_block_ranges(int64_t n, F&& fn) {
  const int64_t blocks = (n + 3) / 4;
  constexpr int64_t kBlocksPerThread = 1 << 16;
  const int64_t hw = std::max(1u, std::thread::hardware_concurrency());
  const int64_t threads = std::min<int64_t>({hw, 16, (blocks + kBlocksPerThread - 1) / kBlocksPerThread});
  if (threads <= 1) return fn(int64_t{0}, blocks);
  std::vector<std::thread> pool;
  const int64_t per = (blocks + threads - 1) / threads;
  for (int64_t k = 0; k < threads; ++k) {
    const int64_t b0 = k * per, b1 = std::min(blocks, b0 + per);
    if (b0 < b1) pool.emplace_back([&fn, b0, b1] { fn(b0, b1); });
  }
  for (auto& th : pool) th.join();
}

// Host fill: element(data, i, dtype, block, lane) for every element.
template <class Element>
void fill_host(const TensorView& t, uint64_t seed, uint64_t offset, Element&& element) {
  const int64_t n = t.numel();
  for_block_ranges(n, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const PhiloxBlock block = philox_block(seed, offset, static_cast<uint64_t>(b));
      const int64_t lanes = std::min<int64_t>(4, n - 4 * b);
      for (int64_t lane = 0; lane < lanes; ++lane)
        element(t.data, 4 * b + lane, t.dtype, block, static_cast<unsigned>(lane));
    }
  });
}

}  // namespace

void fill_uniform(const TensorView& t, uint64_t seed, uint64_t offset, float lo, float hi, void* stream) {
  check_fillable(t, "fill_uniform");
  const float range = hi - lo;
  FK_CHECK(std::isfinite(lo) && std::isfinite(hi) && std::isfinite(range), "fill_uniform: bounds [", lo, ", ",
           hi, ") must be finite with a finite width");
  if (!dtype_is_float(t.dtype)) {
    // The extreme samples are u = 0 and u = 1 - 2^-24 (fma is monotonic in u).
    const float a = std::floor(std::fma(range, 0.0f, lo)), b = std::floor(std::fma(range, 0x1.fffffep-1f, lo));
    const IntRange r = integer_range(t.dtype);
    FK_CHECK(std::min(a, b) >= r.min && std::max(a, b) <= r.max, "fill_uniform: values of [", lo, ", ", hi,
             ") do not fit ", dtype_name(t.dtype), " (", r.min, " .. ", r.max, ")");
  }
  const detail::UniformParams p{lo, range};
  if (t.device.is_cuda()) return detail::fill_uniform_device(t, seed, offset, p, stream);
  fill_host(t, seed, offset, [p](void* d, int64_t i, DType dt, const PhiloxBlock& b, unsigned lane) {
    detail::uniform_element(d, i, dt, b, lane, p);
  });
}

void fill_int(const TensorView& t, uint64_t seed, uint64_t offset, int64_t lo, int64_t hi, void* stream) {
  check_fillable(t, "fill_int");
  FK_CHECK(hi > lo && static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) <= (uint64_t{1} << 32), "fill_int: range [",
           lo, ", ", hi, ") must be non-empty and at most 2^32 wide");
  if (!dtype_is_float(t.dtype)) {
    const IntRange r = integer_range(t.dtype);
    const bool fits = t.dtype == DType::i64 || (static_cast<double>(lo) >= r.min && static_cast<double>(hi - 1) <= r.max);
    FK_CHECK(fits, "fill_int: values of [", lo, ", ", hi, ") do not fit ", dtype_name(t.dtype), " (", r.min, " .. ",
             r.max, ")");
  }
  if (t.device.is_cuda()) return detail::fill_int_device(t, seed, offset, lo, hi, stream);
  fill_host(t, seed, offset, [lo, hi](void* d, int64_t i, DType dt, const PhiloxBlock& b, unsigned lane) {
    detail::int_element(d, i, dt, b, lane, lo, hi);
  });
}

void fill_normal(const TensorView& t, uint64_t seed, uint64_t offset, float mean, float std, void* stream) {
  check_fillable(t, "fill_normal");
  FK_CHECK(std::isfinite(mean) && std::isfinite(std) && std >= 0.0f, "fill_normal: mean ", mean, " and std ", std,
           " must be finite, std >= 0");
  const detail::NormalParams p{mean, std};
  if (t.device.is_cuda()) return detail::fill_normal_device(t, seed, offset, p, stream);
  fill_host(t, seed, offset, [p](void* d, int64_t i, DType dt, const PhiloxBlock& b, unsigned lane) {
    detail::normal_element(d, i, dt, b, lane, p);
  });
}

}  // namespace fk
