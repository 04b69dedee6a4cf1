// The copy of the contiguous-KV prefill path (attention_kernels.h): a batch's pages out of
// the paged caches [P, page_size, Hk, D] into head-major K and V [Hk, rows, D].
// One block per page entry: it reads the page's rows (contiguous, all heads) in 16-byte
// chunks and writes each head's rows to that head's plane, where the kernel's TMA boxes
// then find 128 rows of one head in one contiguous 32 KB run.
#include <climits>
#include <cstdint>

#include "ops/attention/cuda/attention_kernels.h"

namespace fk::ops::attn {
namespace {

constexpr int kGatherThreads = 256;

// The sequence that owns page entry `entry`: the last b with kv_indptr[b] <= entry (a
// sequence without pages shares its start with the next one, which owns the entry).
__device__ int owner_of(const int32_t* kv_indptr, int batch, int entry) {
  int lo = 0, hi = batch - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (kv_indptr[mid] <= entry) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

__global__ void __launch_bounds__(kGatherThreads) gather_kv_pages_kernel(GatherKvPages g) {
  const int entry = static_cast<int>(blockIdx.x);
  __shared__ int page, valid_rows;
  if (threadIdx.x == 0) {
    const int b = owner_of(g.kv_indptr, g.batch, entry);
    page = g.kv_indices[entry];
    valid_rows = entry == g.kv_indptr[b + 1] - 1 ? g.kv_last_page_len[b] : g.page_size;
  }
  __syncthreads();
  const int head_chunks = g.head_dim / 8;  // 16-byte chunks of one head's row
  const int row_chunks = g.num_kv_heads * head_chunks;
  const int page_chunks = g.page_size * row_chunks;
  const uint4* __restrict__ k_src = static_cast<const uint4*>(g.k_cache) + static_cast<int64_t>(page) * page_chunks;
  const uint4* __restrict__ v_src = static_cast<const uint4*>(g.v_cache) + static_cast<int64_t>(page) * page_chunks;
  uint4* __restrict__ k_dst = static_cast<uint4*>(g.k_out);
  uint4* __restrict__ v_dst = static_cast<uint4*>(g.v_out);
  const int64_t first_row = static_cast<int64_t>(entry) * g.page_size;
#pragma unroll 4
  for (int c = threadIdx.x; c < page_chunks; c += kGatherThreads) {
    const int r = c / row_chunks, h = (c % row_chunks) / head_chunks, hc = c % head_chunks;
    uint4 k = make_uint4(0, 0, 0, 0), v = k;
    if (r < valid_rows) {
      k = k_src[c];
      v = v_src[c];
    }
    const int64_t dst = (static_cast<int64_t>(h) * g.rows + first_row + r) * head_chunks + hc;
    k_dst[dst] = k;
    v_dst[dst] = v;
  }
}

}  // namespace

cudaError_t gather_kv_pages(const GatherKvPages& g, cudaStream_t stream) {
  const int64_t entries = g.rows / g.page_size;
  if (entries == 0) return cudaSuccess;
  if (g.head_dim % 8 != 0 || entries > INT32_MAX) return cudaErrorInvalidValue;
  gather_kv_pages_kernel<<<static_cast<unsigned>(entries), kGatherThreads, 0, stream>>>(g);
  return cudaGetLastError();
}

}  // namespace fk::ops::attn
