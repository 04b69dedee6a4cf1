#include "models/llm/fp8_blocks.h"

#include <algorithm>
#include <cmath>

#include "fk/dtype_convert.h"
#include "fk/element.h"
#include "fk/status.h"

namespace fk::engine {

Shape fp8_scale_shape(const Shape& w) {
  FK_CHECK(w.size() >= 2, "fp8 block scales need a weight of rank >= 2, got rank ", w.size());
  Shape s = w;
  for (size_t d = s.size() - 2; d < s.size(); ++d) s[d] = (s[d] + kFp8Block - 1) / kFp8Block;
  return s;
}

namespace {

// The host loop; models/llm/cuda/fp8_blocks.cu is the same computation, one CTA per block.
void quantize_host(const TensorView& w, const TensorView& q, const TensorView& scale) {
  const int64_t R = w.shape[w.rank - 2], C = w.shape[w.rank - 1], M = w.numel() / (R * C);
  const int64_t RB = scale.shape[scale.rank - 2], CB = scale.shape[scale.rank - 1];
  auto* out = static_cast<uint8_t*>(q.data);
  auto* s = static_cast<float*>(scale.data);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t br = 0; br < RB; ++br)
      for (int64_t bc = 0; bc < CB; ++bc) {
        const int64_t r1 = std::min(R, (br + 1) * kFp8Block), c1 = std::min(C, (bc + 1) * kFp8Block);
        auto at = [&](int64_t r, int64_t c) { return (m * R + r) * C + c; };
        float amax = 0;
        for (int64_t r = br * kFp8Block; r < r1; ++r)
          for (int64_t c = bc * kFp8Block; c < c1; ++c)
            amax = std::fmax(amax, std::fabs(static_cast<float>(load_element(w.element_ptr(at(r, c)), w.dtype))));
        const float sb = amax > 0 ? amax / kFp8Max : 1.0f;
        s[(m * RB + br) * CB + bc] = sb;
        for (int64_t r = br * kFp8Block; r < r1; ++r)
          for (int64_t c = bc * kFp8Block; c < c1; ++c)
            out[at(r, c)] = float_to_f8e4m3fn(static_cast<float>(load_element(w.element_ptr(at(r, c)), w.dtype)) / sb);
      }
}

}  // namespace

Fp8Blocks quantize_fp8_blocks(const Tensor& w, void* stream) {
  FK_CHECK(w.defined() && w.rank() >= 2 && w.view().is_contiguous(),
           "quantize_fp8_blocks: needs a contiguous weight of rank >= 2, got ", w.defined() ? w.describe() : "none");
  FK_CHECK(w.dtype() == DType::bf16 || w.dtype() == DType::f16 || w.dtype() == DType::f32,
           "quantize_fp8_blocks: quantizes bf16, f16 or f32 weights, got ", w.describe());
  Fp8Blocks b;
  b.weight = Tensor::empty(w.shape(), DType::f8e4m3fn, w.device(), stream);
  b.scale = Tensor::empty(fp8_scale_shape(w.shape()), DType::f32, w.device(), stream);
  if (w.numel() == 0) return b;
  if (w.device().is_cpu())
    quantize_host(w.view(), b.weight.view(), b.scale.view());
  else
    quantize_fp8_blocks_cuda(w.view(), b.weight.view(), b.scale.view(), stream);
  return b;
}

}  // namespace fk::engine
