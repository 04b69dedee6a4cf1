// expect: PASSED
// Nearest upsampling as the op defines it (out[n, y, x, c] = input[n, y / s_h, x / s_w, c]),
// a copy of each element, on the CPU: YOLOv10's neck with it installed gives the baseline's
// head outputs and detections.
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
        const int64_t sy = y / a.scale_h, sx = x / a.scale_w;
        const char* src = static_cast<const char*>(a.input.data) +
                          (n * a.input.strides[0] + sy * a.input.strides[1] + sx * a.input.strides[2]) * es;
        char* dst = static_cast<char*>(a.out.data) + (n * a.out.strides[0] + y * a.out.strides[1] + x * a.out.strides[2]) * es;
        std::memcpy(dst, src, static_cast<size_t>(C * es));  // channels contiguous
      }
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(upsample_nearest2d, run)
