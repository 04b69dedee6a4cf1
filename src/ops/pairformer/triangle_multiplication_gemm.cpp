// The CPU NT GEMM of triangle_multiplication_gemm.h and the projection helper.
#include "ops/pairformer/triangle_multiplication_gemm.h"

#include <vector>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/linear.h"

namespace fk::ops {

void nt_gemm_cpu(const NtGemm& g, void* /*stream*/) {
  const size_t es = dtype_size(g.dtype);
  const auto* lhs = static_cast<const char*>(g.lhs);
  const auto* rhs = static_cast<const char*>(g.rhs);
  auto* out = static_cast<char*>(g.out);
  // Each rhs matrix converted to double once, then every lhs row against it.
  std::vector<double> r(static_cast<size_t>(g.n * g.k)), l(static_cast<size_t>(g.k));
  for (int64_t b = 0; b < g.batch; ++b) {
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t k = 0; k < g.k; ++k)
        r[n * g.k + k] = load_element(rhs + ((b * g.rhs_batch + n * g.rhs_ld + k) * es), g.dtype);
    for (int64_t m = 0; m < g.m; ++m) {
      for (int64_t k = 0; k < g.k; ++k) l[k] = load_element(lhs + ((b * g.lhs_batch + m * g.lhs_ld + k) * es), g.dtype);
      for (int64_t n = 0; n < g.n; ++n) {
        double acc = 0;
        const double* rn = &r[n * g.k];
        for (int64_t k = 0; k < g.k; ++k) acc += l[k] * rn[k];
        store_element(out + ((b * g.out_batch + m * g.out_ld + n) * es), g.dtype, acc);
      }
    }
  }
}

void pairformer_project(const TensorView& out, const TensorView& input, const TensorView& weight,
                        DeviceType backend, NtGemmFn gemm, void* stream) {
  if (input.dtype != DType::f32) {
    const TensorView none{};
    call_op(LinearArgs{out, input, weight, none, none, none}, backend, stream);
    return;
  }
  const int64_t M = input.shape[0], K = input.shape[1], N = weight.shape[0];
  if (M == 0 || N == 0) return;
  gemm(NtGemm{out.data, input.data, weight.data, DType::f32, 1, M, N, K, N, K, K, 0, 0, 0}, stream);
}

}  // namespace fk::ops
