// expect: INCORRECT
// Nearest upsampling that reads its source pixel from the row below (the last row from
// itself): an off-by-one that shifts the upsampled map by a row, so the neck's fused
// features no longer line up and the head's outputs move.
#include <algorithm>
#include <cstring>

#include "fk/ops/conv.h"

namespace {

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::UpsampleNearest2dArgs*>(raw);
  const int64_t N = a.out.shape[0], OH = a.out.shape[1], OW = a.out.shape[2], C = a.out.shape[3];
  const int64_t es = a.input.element_size();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t y = 0; y < OH; ++y)
      for (int64_t x = 0; x < OW; ++x) {
        const int64_t sy = std::min(y / a.scale_h + 1, a.input.shape[1] - 1), sx = x / a.scale_w;
        const char* src = static_cast<const char*>(a.input.data) +
                          (n * a.input.strides[0] + sy * a.input.strides[1] + sx * a.input.strides[2]) * es;
        char* dst = static_cast<char*>(a.out.data) + (n * a.out.strides[0] + y * a.out.strides[1] + x * a.out.strides[2]) * es;
        std::memcpy(dst, src, static_cast<size_t>(C * es));  // channels contiguous
      }
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(upsample_nearest2d, run)
