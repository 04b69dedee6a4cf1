// expect: INCORRECT
// A CPU linear, right for every GEMM of a ColBERT model's encoder layers and wrong for the
// one without a bias: ColBERT's projection, whose last output column it zeroes. The hidden
// states and dense vectors are the baseline's; the ColBERT vectors are not, and fk e2e eval
// judges them too.
#include <cstring>

#include "fk/dtype_convert.h"
#include "fk/ops/linear.h"

namespace {

double load(fk::DType t, const void* p) {
  uint16_t b;
  std::memcpy(&b, p, 2);
  return t == fk::DType::bf16 ? fk::bf16_to_float(b) : fk::f16_to_float(b);
}
void store(fk::DType t, void* p, double x) {
  const uint16_t b = t == fk::DType::bf16 ? fk::float_to_bf16(static_cast<float>(x)) : fk::float_to_f16(static_cast<float>(x));
  std::memcpy(p, &b, 2);
}

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::LinearArgs*>(raw);
  if (a.input.dtype != fk::DType::bf16 && a.input.dtype != fk::DType::f16) return FK_ERR_UNSUPPORTED;
  const int64_t M = a.input.shape[0], N = a.weight.shape[0], K = a.weight.shape[1];
  const bool bias = a.bias.data != nullptr && a.bias.numel() > 0;
  const auto* in = static_cast<const char*>(a.input.data);
  const auto* w = static_cast<const char*>(a.weight.data);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = bias ? load(a.bias.dtype, static_cast<const char*>(a.bias.data) + 2 * n) : 0.0;
      for (int64_t k = 0; k < K; ++k)
        s += load(a.input.dtype, in + 2 * (m * a.input.strides[0] + k)) * load(a.weight.dtype, w + 2 * (n * K + k));
      store(a.out.dtype, static_cast<char*>(a.out.data) + 2 * (m * a.out.strides[0] + n), !bias && n == N - 1 ? 0.0 : s);
    }
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(linear, run)
