// embedding CUDA baseline: a row gather, copied as raw bytes.
// embedding 16384 tokens x 4096 bf16 moves 268 MB (each gathered 8 KB row read once, each
// out row written once): 89 us at 3.0 TB/s.
//
// Geometry as the activation kernels (act_kernels.cuh): blockIdx.x = token, blockIdx.y =
// chunk of the row, threads x kVecs words per block, all loads issued before the stores.
// Words are 16 bytes when the row length, strides and pointers allow, else one element.
// Out-of-range ids (a broken precondition; see EmbeddingArgs) write zeros and read nothing.
#include "fk/op_registry.h"
#include "ops/activation/act_kernels.cuh"
#include "ops/embedding/embedding_validate.h"

namespace fk::ops {
namespace {

struct GatherParams {
  void* out;
  int64_t out_stride;    // in words
  const void* ids;
  bool ids_are_i64;
  const void* table;
  int64_t table_stride;  // in words
  int64_t vocab;
  int64_t rows;
  int row_words;
};

template <class W, int kVecs>
__global__ void __launch_bounds__(act_cuda::kMaxThreads) embedding_gather(GatherParams p) {
  const int64_t row = blockIdx.x;
  const int64_t id = p.ids_are_i64 ? static_cast<const int64_t*>(p.ids)[row] : static_cast<const int32_t*>(p.ids)[row];
  const bool valid = id >= 0 && id < p.vocab;
  const W* src = static_cast<const W*>(p.table) + (valid ? id : 0) * p.table_stride;
  W* dst = static_cast<W*>(p.out) + row * p.out_stride;
  const int64_t chunk = static_cast<int64_t>(blockDim.x) * kVecs;
  for (int64_t base = blockIdx.y * chunk + threadIdx.x; base < p.row_words; base += gridDim.y * chunk) {
    W v[kVecs];
#pragma unroll
    for (int c = 0; c < kVecs; ++c) {
      const int64_t i = base + c * blockDim.x;
      v[c] = valid && i < p.row_words ? __ldg(src + i) : W{};
    }
#pragma unroll
    for (int c = 0; c < kVecs; ++c) {
      const int64_t i = base + c * blockDim.x;
      if (i < p.row_words) dst[i] = v[c];
    }
  }
}

template <class W>
void launch_gather(GatherParams p, int64_t elem_size, cudaStream_t stream) {
  p.row_words = static_cast<int>(p.row_words * elem_size / static_cast<int64_t>(sizeof(W)));
  p.out_stride = p.out_stride * elem_size / static_cast<int64_t>(sizeof(W));
  p.table_stride = p.table_stride * elem_size / static_cast<int64_t>(sizeof(W));
  const act_cuda::RowChunks g = act_cuda::row_chunks(p.rows, p.row_words);
  const dim3 grid = act_cuda::row_chunk_grid(p.rows, g);
  if (g.vecs_per_thread == 2) embedding_gather<W, 2><<<grid, g.threads, 0, stream>>>(p);
  else embedding_gather<W, 1><<<grid, g.threads, 0, stream>>>(p);
  FK_CUDA_CHECK_LAUNCH();
}

fk_status embedding_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const EmbeddingArgs*>(args);
    validate_embedding(a, DeviceType::cuda);
    const int64_t T = a.ids.shape[0], H = a.table.shape[1], es = a.table.element_size();
    if (T == 0) return;
    GatherParams p{a.out.data, a.out.strides[0], a.ids.data, a.ids.dtype == DType::i64, a.table.data,
                   a.table.strides[0], a.table.shape[0], T, static_cast<int>(H)};
    auto s = static_cast<cudaStream_t>(stream);
    const bool vec_ok = (H * es) % 16 == 0 && (a.out.strides[0] * es) % 16 == 0 &&
                        (a.table.strides[0] * es) % 16 == 0 && cuda::all_aligned16(a.out.data, a.table.data);
    if (vec_ok) launch_gather<uint4>(p, es, s);
    else if (es == 4) launch_gather<unsigned int>(p, es, s);
    else launch_gather<unsigned short>(p, es, s);
  });
}

FK_REGISTER_IMPL("embedding", cuda, embedding_cuda);

}  // namespace
}  // namespace fk::ops
