// embedding_bag CUDA baseline: per bag, the table rows at its indices summed in fp32.
//
// A bag belongs to a group of G threads (G the row's words rounded up to a power of two, at
// most 32: D = 128 bf16 is 16 words of 16 bytes, so 16 threads and 16 bags a block of 256),
// each thread a column of 16-byte words of the row, so a row is read in full 16-byte words
// and the group's loads of one row are one contiguous 256-byte span. Rows longer than 32
// words loop over the row. Every thread of the group reads the same index (one broadcast
// load), and a thread keeps kUnroll rows of the bag in flight before it adds them: the
// gather is latency-bound on random rows, so the loads of a bag's next rows must not wait
// for the adds of the previous ones. Rows whose length, strides or pointers do not allow
// 16-byte words take the same path one element at a time.
//
// Bad metadata cannot be reported without a synchronisation (fk/ops/recsys.h): offsets are
// clamped into [0, N] and an index outside [0, V) adds nothing, so no load leaves the
// tensors. The sum runs in bag order, one fmaf per row and element (weight 1 without
// per_sample_weights: an exact add), and a mean divides once at the end, as the reference.
// Launched the ordinary way (no PDL), like the embedding gather.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/recsys/embedding_bag_validate.h"

namespace fk::ops {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;  // rows of a bag a thread has in flight at once

template <class T, class I>
struct BagParams {
  T* out;
  int64_t out_stride;  // in elements
  const T* table;
  int64_t table_stride;  // in elements
  int64_t rows;          // V: valid indices are [0, V)
  const I* indices;
  const I* offsets;
  int64_t num_indices;  // N: offsets are clamped into [0, N]
  const T* weights;     // per_sample_weights, or null
  int64_t bags;
  int words;  // words of kN elements a row
  int group;  // threads a bag: a power of two, at most 32
  bool mean;
};

// Entry i of the bag: its row's word v, and its weight (0 and a zero word for an index
// outside the table, which then adds nothing and is never read).
template <class T, int kN, class I>
__device__ __forceinline__ void load_entry(const BagParams<T, I>& p, int64_t i, int v, cuda::PackedVec<T, kN>& row,
                                           float& weight) {
  const auto id = static_cast<int64_t>(p.indices[i]);
  if (id >= 0 && id < p.rows) {
    row = cuda::load_packed_ro<kN>(p.table + id * p.table_stride + static_cast<int64_t>(v) * kN);
    weight = p.weights != nullptr ? cuda::to_float(p.weights[i]) : 1.f;
  } else {
#pragma unroll
    for (int k = 0; k < cuda::PackedVec<T, kN>::kWords; ++k) row.w[k] = 0u;
    weight = 0.f;
  }
}

template <class T, int kN>
__device__ __forceinline__ void accumulate(float (&acc)[kN], const cuda::PackedVec<T, kN>& row, float weight) {
#pragma unroll
  for (int k = 0; k < kN; ++k) acc[k] = fmaf(weight, cuda::unpack(row, k), acc[k]);
}

__device__ __forceinline__ int64_t clamp_offset(int64_t o, int64_t lo, int64_t hi) {
  return o < lo ? lo : (o > hi ? hi : o);
}

template <class T, int kN, class I>
__global__ void __launch_bounds__(kThreads) embedding_bag_kernel(const BagParams<T, I> p) {
  const int lane = static_cast<int>(threadIdx.x) & (p.group - 1);
  const int64_t bags_per_block = kThreads / p.group;
  for (int64_t bag = blockIdx.x * bags_per_block + threadIdx.x / p.group; bag < p.bags;
       bag += static_cast<int64_t>(gridDim.x) * bags_per_block) {
    const int64_t start = clamp_offset(static_cast<int64_t>(p.offsets[bag]), 0, p.num_indices);
    const int64_t end = clamp_offset(static_cast<int64_t>(p.offsets[bag + 1]), start, p.num_indices);
    T* dst = p.out + bag * p.out_stride;
    for (int v = lane; v < p.words; v += p.group) {
      float acc[kN];
#pragma unroll
      for (int k = 0; k < kN; ++k) acc[k] = 0.f;
      int64_t i = start;
      for (; i + kUnroll <= end; i += kUnroll) {
        cuda::PackedVec<T, kN> row[kUnroll];
        float weight[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) load_entry<T, kN>(p, i + u, v, row[u], weight[u]);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) accumulate<T, kN>(acc, row[u], weight[u]);
      }
      for (; i < end; ++i) {
        cuda::PackedVec<T, kN> row;
        float weight;
        load_entry<T, kN>(p, i, v, row, weight);
        accumulate<T, kN>(acc, row, weight);
      }
      if (p.mean && end > start) {
        const float count = static_cast<float>(end - start);
#pragma unroll
        for (int k = 0; k < kN; ++k) acc[k] = acc[k] / count;
      }
      cuda::store_packed<kN>(dst + static_cast<int64_t>(v) * kN, cuda::pack<T, kN>(acc));
    }
  }
}

template <class T, int kN, class I>
void launch(const EmbeddingBagArgs& a, cudaStream_t stream) {
  BagParams<T, I> p;
  p.out = static_cast<T*>(a.out.data);
  p.out_stride = a.out.strides[0];
  p.table = static_cast<const T*>(a.table.data);
  p.table_stride = a.table.strides[0];
  p.rows = a.table.shape[0];
  p.indices = static_cast<const I*>(a.indices.data);
  p.offsets = static_cast<const I*>(a.offsets.data);
  p.num_indices = a.indices.shape[0];
  p.weights = arg_present(a.per_sample_weights) ? static_cast<const T*>(a.per_sample_weights.data) : nullptr;
  p.bags = a.offsets.shape[0] - 1;
  p.words = static_cast<int>(a.table.shape[1] / kN);
  p.group = 1;
  while (p.group < 32 && p.group < p.words) p.group *= 2;
  p.mean = a.mode == EmbeddingBagMode::mean;
  const int64_t bags_per_block = kThreads / p.group;
  const int64_t blocks = std::min<int64_t>(cuda::ceil_div(p.bags, bags_per_block), int64_t{1} << 30);
  embedding_bag_kernel<T, kN, I><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p);
  FK_CUDA_CHECK_LAUNCH();
}

template <class T, int kN>
void launch_for_index(const EmbeddingBagArgs& a, cudaStream_t stream) {
  if (a.indices.dtype == DType::i64)
    launch<T, kN, int64_t>(a, stream);
  else
    launch<T, kN, int32_t>(a, stream);
}

// 16-byte words when the row length, both row strides (where more than one row is used)
// and both pointers allow them.
bool words_fit(const EmbeddingBagArgs& a) {
  const int64_t es = a.table.element_size();
  return (a.table.shape[1] * es) % 16 == 0 && (a.table.shape[0] <= 1 || (a.table.strides[0] * es) % 16 == 0) &&
         (a.out.shape[0] <= 1 || (a.out.strides[0] * es) % 16 == 0) && cuda::all_aligned16(a.out.data, a.table.data);
}

fk_status embedding_bag_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const EmbeddingBagArgs*>(args);
    validate_embedding_bag(a, DeviceType::cuda);
    if (a.offsets.shape[0] <= 1) return;  // no bags
    const auto s = static_cast<cudaStream_t>(stream);
    const bool vec = words_fit(a);
    cuda::dispatch_float_dtype(a.table.dtype, EmbeddingBagArgs::kName, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if (vec)
        launch_for_index<T, cuda::Packed16Of<T>::N>(a, s);
      else
        launch_for_index<T, 1>(a, s);
    });
  });
}

FK_REGISTER_IMPL("embedding_bag", cuda, embedding_bag_cuda);

}  // namespace
}  // namespace fk::ops
