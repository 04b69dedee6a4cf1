// triangle_attention_layout.h on the CPU (element bytes copied as they are) and the
// dispatch to the CUDA kernels.
#include "ops/pairformer/triangle_attention_layout.h"

#include <cstring>

#include "fk/status.h"
#include "fk/tensor.h"

namespace fk::ops {

void pair_rows_copy(const TensorView& dst, const TensorView& src, int64_t nb, int64_t n1, int64_t n2, int64_t col0,
                    bool transpose, DeviceType backend, void* stream) {
  FK_CHECK(dst.dtype == src.dtype && dst.rank == 2 && src.rank == 2 && dst.shape[0] == nb * n1 * n2 &&
               src.shape[0] == nb * n1 * n2 && col0 + dst.shape[1] <= src.shape[1] && (!transpose || n1 == n2),
           "pair_rows_copy: dst ", describe(dst), " and src ", describe(src), " do not fit a [", nb, ", ", n1, ", ",
           n2, "] grid from column ", col0);
  if (dst.numel() == 0) return;
  if (backend == DeviceType::cuda) return pair_rows_copy_cuda(dst, src, nb, n1, n2, col0, transpose, stream);
  const size_t es = dtype_size(dst.dtype);
  const int64_t width = dst.shape[1], src_cols = src.shape[1];
  const auto* s = static_cast<const char*>(src.data);
  auto* d = static_cast<char*>(dst.data);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t i = 0; i < n1; ++i)
      for (int64_t j = 0; j < n2; ++j) {
        const int64_t from = transpose ? (b * n1 + j) * n2 + i : (b * n1 + i) * n2 + j;
        const int64_t to = (b * n1 + i) * n2 + j;
        std::memcpy(d + static_cast<size_t>(to * width) * es, s + static_cast<size_t>(from * src_cols + col0) * es,
                    static_cast<size_t>(width) * es);
      }
}

void pair_heads_major(const TensorView& dst, const TensorView& src, int64_t nb, int64_t n, bool transpose,
                      DeviceType backend, void* stream) {
  FK_CHECK(dst.dtype == src.dtype && dst.rank == 4 && dst.shape[0] == nb && dst.shape[2] == n && dst.shape[3] == n &&
               src.rank == 2 && src.shape[0] == nb * n * n && src.shape[1] == dst.shape[1],
           "pair_heads_major: dst ", describe(dst), " and src ", describe(src), " do not fit [", nb, ", heads, ", n,
           ", ", n, "]");
  if (dst.numel() == 0) return;
  if (backend == DeviceType::cuda) return pair_heads_major_cuda(dst, src, nb, n, transpose, stream);
  const size_t es = dtype_size(dst.dtype);
  const int64_t heads = dst.shape[1];
  const auto* s = static_cast<const char*>(src.data);
  auto* d = static_cast<char*>(dst.data);
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const int64_t pair = transpose ? (b * n + j) * n + i : (b * n + i) * n + j;
          std::memcpy(d + static_cast<size_t>(((b * heads + h) * n + i) * n + j) * es,
                      s + static_cast<size_t>(pair * heads + h) * es, es);
        }
}

}  // namespace fk::ops
