// GPU references (OpRegistry::gpu_reference) of the paged attention ops, for workloads too
// large for the CPU oracle: the semantics of attention_reference.cpp in double on the
// device. Every query row sees the KV positions [lo, hi) of its sequence (causal mask,
// sliding window), logits s = sm_scale * (q . k) (soft-capped: cap * tanh(s / cap)),
// out = softmax(s) @ v and lse = log2(sum exp(s)), with an online softmax over tiles of
// 32 KV positions (the same values as the CPU's two passes, up to double rounding).
//
// One block per (tile of 32 query rows of one sequence, query head). Queries, keys and
// values are staged in shared memory as doubles (exact conversions); head_dim <= 256.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "fk/op_registry.h"
#include "fk/ops/attention.h"
#include "fk/runtime.h"
#include "ops/attention/attention_validate.h"
#include "ops/attention/paged_batch.h"
#include "ops/common/gpu_reference.cuh"

namespace fk::ops::attn {
namespace {

constexpr int kRows = 32;      // query rows of a block
constexpr int kKvTile = 32;    // KV positions per step: one lane each in the softmax
constexpr int kThreads = 256;  // 8 warps; warp w owns rows w, w + 8, w + 16, w + 24
constexpr int64_t kMaxHeadDim = 256;

struct Params {
  const void* q;
  int64_t q_token_stride, q_head_stride, q_dim_stride;
  const void* k_cache;  // [P, page_size, Hk, D], contiguous
  const void* v_cache;
  const int32_t* qo_indptr;  // null: decode (one query token per sequence)
  const int32_t* kv_indptr;
  const int32_t* kv_indices;
  const int32_t* kv_last_page_len;
  double* out;
  int64_t out_token_stride, out_head_stride;
  double* lse;  // null: not requested
  int64_t lse_token_stride;
  int64_t batch, num_qo_heads, num_kv_heads, head_dim, page_size;
  double sm_scale, soft_cap;  // soft_cap 0: none
  int64_t window_left;        // -1: none
  bool causal;
};

__device__ __forceinline__ double warp_max(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

size_t shared_bytes(int64_t D) {
  const int64_t doubles = kRows * (D + 1) + kKvTile * (D + 1) + kKvTile * D + kRows * (kKvTile + 1) + 3 * kRows;
  return static_cast<size_t>(doubles) * sizeof(double);
}

// kColsPerLane = ceil(head_dim / 32): lane l owns output columns l + 32c.
template <class T, int kColsPerLane>
__global__ void __launch_bounds__(kThreads) attention_reference_kernel(Params p) {
  extern __shared__ double smem[];
  const int64_t D = p.head_dim, ld = D + 1;  // padded rows: the score loop reads 16 rows at one column
  double* qs = smem;                         // [kRows][D + 1]
  double* ks = qs + kRows * ld;              // [kKvTile][D + 1]
  double* vs = ks + kKvTile * ld;            // [kKvTile][D]
  double* ps = vs + kKvTile * D;             // [kRows][kKvTile + 1]: logits, then probabilities
  double* row_max = ps + kRows * (kKvTile + 1);
  double* row_sum = row_max + kRows;
  double* row_alpha = row_sum + kRows;
  constexpr int kPs = kKvTile + 1;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int64_t h = blockIdx.y, kh = h / (p.num_qo_heads / p.num_kv_heads);
  const T* q = static_cast<const T*>(p.q);
  const T* kc = static_cast<const T*>(p.k_cache);
  const T* vc = static_cast<const T*>(p.v_cache);

  for (int64_t b = blockIdx.z; b < p.batch; b += gridDim.z) {
    const int64_t qo_start = p.qo_indptr ? p.qo_indptr[b] : b;
    const int64_t qo_len = p.qo_indptr ? p.qo_indptr[b + 1] - qo_start : 1;
    const int64_t i0 = static_cast<int64_t>(blockIdx.x) * kRows;
    if (i0 >= qo_len) continue;  // the same for the whole block
    const int rows = static_cast<int>(min(static_cast<int64_t>(kRows), qo_len - i0));
    const int64_t page_begin = p.kv_indptr[b], pages = p.kv_indptr[b + 1] - page_begin;
    const int64_t kv_len = pages == 0 ? 0 : (pages - 1) * p.page_size + p.kv_last_page_len[b];
    // Row r is the query at position kv_len - qo_len + i0 + r; it sees [lo(r), hi(r)),
    // and both bounds grow with r.
    auto lo_of = [&](int r) -> int64_t {
      const int64_t pos = kv_len - qo_len + i0 + r;
      return p.window_left >= 0 ? max(static_cast<int64_t>(0), pos - p.window_left) : 0;
    };
    auto hi_of = [&](int r) -> int64_t { return p.causal ? kv_len - qo_len + i0 + r + 1 : kv_len; };
    const int64_t kv_lo = lo_of(0), kv_hi = hi_of(rows - 1);

    for (int64_t e = tid; e < kRows * D; e += kThreads) {
      const int64_t r = e / D, d = e % D;
      const int64_t at = (qo_start + i0 + r) * p.q_token_stride + h * p.q_head_stride + d * p.q_dim_stride;
      qs[r * ld + d] = r < rows ? gpu_ref::to_double(q[at]) : 0.0;
    }
    if (tid < kRows) {
      row_max[tid] = -INFINITY;
      row_sum[tid] = 0.0;
    }
    double o[4][kColsPerLane];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int c = 0; c < kColsPerLane; ++c) o[i][c] = 0.0;
    __syncthreads();

    for (int64_t j0 = kv_lo; j0 < kv_hi; j0 += kKvTile) {
      for (int64_t e = tid; e < kKvTile * D; e += kThreads) {
        const int64_t c = e / D, d = e % D, pos = j0 + c;
        double kval = 0.0, vval = 0.0;
        if (pos < kv_hi) {
          const int64_t page = p.kv_indices[page_begin + pos / p.page_size], slot = pos % p.page_size;
          const int64_t at = ((page * p.page_size + slot) * p.num_kv_heads + kh) * D + d;
          kval = gpu_ref::to_double(kc[at]);
          vval = gpu_ref::to_double(vc[at]);
        }
        ks[c * ld + d] = kval;
        vs[c * D + d] = vval;
      }
      __syncthreads();

      {  // logits: thread (ty, tx) computes rows ty, ty + 16 x positions tx, tx + 16
        const int tx = tid % 16, ty = tid / 16;
        double s[2][2] = {{0.0, 0.0}, {0.0, 0.0}};
        for (int64_t d = 0; d < D; ++d) {
          const double q0 = qs[ty * ld + d], q1 = qs[(ty + 16) * ld + d];
          const double k0 = ks[tx * ld + d], k1 = ks[(tx + 16) * ld + d];
          s[0][0] = fma(q0, k0, s[0][0]);
          s[0][1] = fma(q0, k1, s[0][1]);
          s[1][0] = fma(q1, k0, s[1][0]);
          s[1][1] = fma(q1, k1, s[1][1]);
        }
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const int r = ty + 16 * i, c = tx + 16 * j;
            const int64_t pos = j0 + c;
            double logit = -INFINITY;
            if (r < rows && pos >= lo_of(r) && pos < hi_of(r)) {
              logit = p.sm_scale * s[i][j];
              if (p.soft_cap > 0) logit = p.soft_cap * tanh(logit / p.soft_cap);
            }
            ps[r * kPs + c] = logit;
          }
      }
      __syncthreads();

      // Online softmax, one warp per row, one lane per KV position.
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int r = warp + 8 * i;
        const double s = ps[r * kPs + lane];
        const double m_old = row_max[r];
        const double m_new = fmax(m_old, warp_max(s));
        const double pr = s == -INFINITY ? 0.0 : exp(s - m_new);
        const double sum = warp_sum(pr);
        ps[r * kPs + lane] = pr;
        __syncwarp();  // every lane has read row_max[r] before lane 0 updates it
        if (lane == 0) {
          const double alpha = m_old == -INFINITY ? 0.0 : exp(m_old - m_new);
          row_alpha[r] = alpha;
          row_sum[r] = row_sum[r] * alpha + sum;
          row_max[r] = m_new;
        }
      }
      __syncthreads();

#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const double alpha = row_alpha[warp + 8 * i];
#pragma unroll
        for (int c = 0; c < kColsPerLane; ++c) o[i][c] *= alpha;
      }
      for (int j = 0; j < kKvTile; ++j) {
        double pr[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) pr[i] = ps[(warp + 8 * i) * kPs + j];
#pragma unroll
        for (int c = 0; c < kColsPerLane; ++c) {
          const int64_t d = lane + 32 * c;
          if (d >= D) continue;
          const double v = vs[j * D + d];
#pragma unroll
          for (int i = 0; i < 4; ++i) o[i][c] = fma(pr[i], v, o[i][c]);
        }
      }
      __syncthreads();  // the next tile overwrites ks, vs and ps
    }

#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int r = warp + 8 * i;
      if (r >= rows) continue;
      const double l = row_sum[r];
      const double inv = l > 0 ? 1.0 / l : 0.0;
      const int64_t t = qo_start + i0 + r;
#pragma unroll
      for (int c = 0; c < kColsPerLane; ++c) {
        const int64_t d = lane + 32 * c;
        if (d < D) p.out[t * p.out_token_stride + h * p.out_head_stride + d] = o[i][c] * inv;
      }
      if (lane == 0 && p.lse) p.lse[t * p.lse_token_stride + h] = l > 0 ? (row_max[r] + log(l)) / log(2.0) : -INFINITY;
    }
    __syncthreads();  // the next sequence restages qs and the row statistics
  }
}

// A device i32 vector on the host (copied on `stream`, which is then synchronised).
Tensor download_i32(const TensorView& v, cudaStream_t stream) {
  Tensor host = Tensor::empty({v.shape[0]}, DType::i32);
  if (v.shape[0] > 0) rt::memcpy_async(host.data(), Device::cpu(), v.data, v.device, host.nbytes(), stream);
  rt::stream_synchronize(stream);
  return host;
}

template <class T, int kColsPerLane>
void launch(const Params& p, int64_t query_tiles, cudaStream_t stream) {
  const size_t smem = shared_bytes(p.head_dim);
  auto* kernel = attention_reference_kernel<T, kColsPerLane>;
  FK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  const dim3 grid(static_cast<unsigned>(query_tiles), static_cast<unsigned>(p.num_qo_heads),
                  gpu_ref::grid_dim_yz(p.batch));
  kernel<<<grid, kThreads, smem, stream>>>(p);
  FK_CUDA_CHECK_LAUNCH();
}

// Shared by both ops: `qo_indptr` is null for decode (whose queries are causal by nature).
void attention_gpu_reference(const CommonArgs& a, bool causal, cudaStream_t stream) {
  const char* op = a.op;
  expect_dtype(op, "out", a.out, DType::f64);  // the reference writes the oracle's f64
  if (has_lse(a.lse)) expect_dtype(op, "lse", a.lse, DType::f64);
  const int64_t T = a.q.shape[0], Hq = a.q.shape[1], D = a.q.shape[2];
  const int64_t P = a.k_cache.shape[0], page_size = a.k_cache.shape[1], Hk = a.k_cache.shape[2];
  FK_CHECK(D <= kMaxHeadDim, op, " GPU reference: head_dim ", D, " exceeds ", kMaxHeadDim);
  FK_CHECK(Hq <= 65535, op, " GPU reference: ", Hq, " query heads exceed the grid limit");

  // The layout, read from the device metadata itself (not the host mirrors) and checked
  // like the CPU reference checks it, pages included.
  const Tensor qo_indptr = a.qo_indptr ? download_i32(*a.qo_indptr, stream) : Tensor();
  const Tensor kv_indptr = download_i32(a.kv_indptr, stream);
  const Tensor last_page_len = download_i32(a.kv_last_page_len, stream);
  const Tensor kv_indices = download_i32(a.kv_indices, stream);
  const TensorView qo_view = qo_indptr.defined() ? qo_indptr.view() : TensorView{};
  const PagedBatch pb = read_paged_batch(op, a.qo_indptr ? &qo_view : nullptr, kv_indptr, last_page_len, T,
                                         a.kv_indices.shape[0], page_size);
  const int32_t* pages = kv_indices.data_as<int32_t>();
  for (int64_t e = 0; e < pb.kv_indptr.back(); ++e)
    FK_CHECK(pages[e] >= 0 && pages[e] < P, op, ": kv_indices[", e, "] = ", pages[e],
             " is not a page of the cache [0, ", P, ")");
  int64_t max_qo_len = 0;
  for (int64_t b = 0; b < pb.size(); ++b) max_qo_len = std::max(max_qo_len, pb.qo_len(b));
  if (T == 0 || max_qo_len == 0) return;

  Params p{};
  p.q = a.q.data;
  p.q_token_stride = a.q.strides[0];
  p.q_head_stride = a.q.strides[1];
  p.q_dim_stride = a.q.strides[2];
  p.k_cache = a.k_cache.data;
  p.v_cache = a.v_cache.data;
  p.qo_indptr = a.qo_indptr ? static_cast<const int32_t*>(a.qo_indptr->data) : nullptr;
  p.kv_indptr = static_cast<const int32_t*>(a.kv_indptr.data);
  p.kv_indices = static_cast<const int32_t*>(a.kv_indices.data);
  p.kv_last_page_len = static_cast<const int32_t*>(a.kv_last_page_len.data);
  p.out = static_cast<double*>(a.out.data);
  p.out_token_stride = a.out.strides[0];
  p.out_head_stride = a.out.strides[1];
  p.lse = has_lse(a.lse) ? static_cast<double*>(a.lse.data) : nullptr;
  p.lse_token_stride = has_lse(a.lse) ? a.lse.strides[0] : 0;
  p.batch = pb.size();
  p.num_qo_heads = Hq;
  p.num_kv_heads = Hk;
  p.head_dim = D;
  p.page_size = page_size;
  p.sm_scale = a.sm_scale;  // the float attributes, widened as the CPU reference widens them
  p.soft_cap = a.logits_soft_cap;
  p.window_left = a.window_left;
  p.causal = causal;
  const int64_t query_tiles = (max_qo_len + kRows - 1) / kRows;
  gpu_ref::expect_grid_x(op, query_tiles);
  auto by_width = [&](auto tag) {
    using Elem = decltype(tag);
    if (D <= 64) launch<Elem, 2>(p, query_tiles, stream);
    else if (D <= 128) launch<Elem, 4>(p, query_tiles, stream);
    else launch<Elem, 8>(p, query_tiles, stream);
  };
  if (a.q.dtype == DType::bf16) by_width(__nv_bfloat16{});
  else by_width(__half{});  // validate_common admits bf16 and f16 only
}

fk_status prefill_gpu_reference(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const BatchPrefillPagedAttentionArgs*>(args);
    validate_prefill(a, DeviceType::cuda);
    attention_gpu_reference(common_args(a), a.causal != 0, static_cast<cudaStream_t>(stream));
  });
}

fk_status decode_gpu_reference(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const BatchDecodePagedAttentionArgs*>(args);
    validate_decode(a, DeviceType::cuda);
    attention_gpu_reference(common_args(a), /*causal=*/true, static_cast<cudaStream_t>(stream));
  });
}

FK_REGISTER_GPU_REFERENCE("batch_prefill_paged_attention", prefill_gpu_reference);
FK_REGISTER_GPU_REFERENCE("batch_decode_paged_attention", decode_gpu_reference);

}  // namespace
}  // namespace fk::ops::attn
