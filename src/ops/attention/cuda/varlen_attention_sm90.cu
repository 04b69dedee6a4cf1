// varlen_attention_sm90.h: FlashInfer's Hopper ragged prefill over head-major K and V.
//
// Per call: the sequence offsets to the host; FlashInfer's schedule (PrefillSM90Plan: one
// work item per query head and 128-row query tile, balanced over the SMs) into a device
// workspace; K and V copied from their [T, Hk, D] views into [Hk, T, D] planes, where the
// kernel's TMA boxes find 128 rows of one head in one contiguous run (the layout of the
// paged prefill's contiguous-KV path, whose kernel this is); then the kernel. The copy is
// 4 T Hk D bytes against the kernel's 4 Tq Tk Hq D flops: negligible from a few hundred
// tokens on, where this path is for.
#include "ops/attention/cuda/flashinfer_compat.cuh"  // first: before any FlashInfer header

#include <flashinfer/attention/scheduler.cuh>
#include <flashinfer/exception.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/ops/attention.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "fk/tensor.h"
#include "ops/attention/cuda/attention_kernels.h"
#include "ops/attention/cuda/sm90_schedule.cuh"
#include "ops/attention/cuda/varlen_attention_sm90.h"

namespace fk::ops::attn {
namespace {

constexpr int kHeadDim = 128;  // the instantiation's; narrower heads are zero-padded to it
constexpr int kMinPaddedHeadDim = 72;  // below, padding costs more than the kernel gains
constexpr int kQueryTile = 128;          // PrefillSM90Plan's query tile at head dim 128
constexpr int kMaxWorksPerHead = 4096;   // beyond: FlashInfer's per-head schedule, not instantiated
constexpr int kCopyThreads = 256;

constexpr int kVecs = kHeadDim / 8;  // 16-byte vectors per padded head row

// Calls visit(row, head, vector) for every 16-byte vector of a [rows, heads, 128] grid, a
// vector a thread, grid-striding.
template <class Visit>
__device__ void for_each_vector(int64_t rows, int heads, Visit visit) {
  const int64_t total = rows * heads * kVecs;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    visit(i / kVecs / heads, static_cast<int>(i / kVecs % heads), static_cast<int>(i % kVecs));
}

// K and V rows of [rows, heads, d] views (last dim contiguous, d = 8 * vecs) into
// [heads, rows, 128] planes, zeros past d.
__global__ void __launch_bounds__(kCopyThreads)
    to_head_major(const uint4* __restrict__ k, const uint4* __restrict__ v, int64_t k_row, int64_t k_head,
                  int64_t v_row, int64_t v_head, uint4* __restrict__ k_out, uint4* __restrict__ v_out, int64_t rows,
                  int heads, int vecs) {
  for_each_vector(rows, heads, [&](int64_t r, int h, int c) {
    const int64_t out = (h * rows + r) * kVecs + c;
    const bool inside = c < vecs;
    k_out[out] = inside ? k[r * k_row + h * k_head + c] : uint4{};
    v_out[out] = inside ? v[r * v_row + h * v_head + c] : uint4{};
  });
}

// Rows of a [rows, heads, d] view into a packed [rows, heads, 128] buffer, zeros past d
// (`pad`), or back: the first d of each padded row into the view (`!pad`).
__global__ void __launch_bounds__(kCopyThreads)
    pad_heads(uint4* __restrict__ view, int64_t row, int64_t head, uint4* __restrict__ padded, int64_t rows, int heads,
              int vecs, bool pad) {
  for_each_vector(rows, heads, [&](int64_t r, int h, int c) {
    const int64_t at = r * row + h * head + c, packed = (r * heads + h) * kVecs + c;
    if (pad) padded[packed] = c < vecs ? view[at] : uint4{};
    else if (c < vecs) view[at] = padded[packed];
  });
}

int copy_blocks(int64_t rows, int64_t heads) {
  return static_cast<int>(std::min<int64_t>((rows * heads * kVecs + kCopyThreads - 1) / kCopyThreads, 132 * 16));
}

// The host side of the schedule's upload: a page-locked buffer per thread, rewritten only
// after the stream has taken the previous schedule from it (PrefillSM90Plan copies it
// asynchronously).
struct HostSchedule {
  Tensor buffer;
  cudaEvent_t copied = nullptr;

  void* take(int64_t bytes) {
    if (copied == nullptr) FK_CUDA_CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
    FK_CUDA_CHECK(cudaEventSynchronize(copied));  // an unrecorded event is complete
    if (!buffer.defined() || static_cast<int64_t>(buffer.nbytes()) < bytes) buffer = Tensor::empty_pinned({bytes}, DType::u8);
    return buffer.data();
  }
  void sent(cudaStream_t stream) { FK_CUDA_CHECK(cudaEventRecord(copied, stream)); }
};

bool views_fit(const VarlenAttentionArgs& a) {
  const int64_t hq = a.q.shape[1];
  // Rows and heads of every view (the output included: FLUX's single block writes the
  // attention into the first columns of its [attention | MLP] buffer) start 16-byte aligned.
  bool rows_fit = true;
  for (const TensorView* t : {&a.q, &a.k, &a.v, &a.out})
    rows_fit = rows_fit && t->strides[2] == 1 && t->strides[0] % 8 == 0 && t->strides[1] % 8 == 0;
  const int64_t d = a.q.shape[2];
  const bool head_dim_fits = d >= kMinPaddedHeadDim && d <= kHeadDim && d % 8 == 0;
  return head_dim_fits && (a.q.dtype == DType::bf16 || a.q.dtype == DType::f16) && rows_fit &&
         cuda::all_aligned16(a.q.data, a.k.data, a.v.data, a.out.data) && hq % a.k.shape[1] == 0;
}

// Whether every sequence's queries see a key under the mask (the mma kernel writes zeros
// for a query that sees none; FlashInfer's output there is not defined).
bool every_query_sees_a_key(const std::vector<int32_t>& cu_q, const std::vector<int32_t>& cu_k, bool causal) {
  for (size_t b = 0; b + 1 < cu_q.size(); ++b) {
    const int32_t lq = cu_q[b + 1] - cu_q[b], lk = cu_k[b + 1] - cu_k[b];
    if (lq > 0 && (lk == 0 || (causal && lq > lk))) return false;
  }
  return true;
}

}  // namespace

bool varlen_attention_sm90(const VarlenAttentionArgs& a, cudaStream_t stream) {
  // FlashInfer's ragged kernel takes a key count per sequence only through its offsets.
  if (!views_fit(a) || a.seqused_k.data != nullptr) return false;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  FK_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) return false;
  const int64_t batch = a.cu_seqlens_q.shape[0] - 1, tq = a.q.shape[0], tk = a.k.shape[0];
  const int64_t hq = a.q.shape[1], hk = a.k.shape[1];
  if ((tq + kQueryTile - 1) / kQueryTile + batch - 1 > kMaxWorksPerHead) return false;
  std::vector<int32_t> cu_q(static_cast<size_t>(batch + 1)), cu_k(static_cast<size_t>(batch + 1));
  const size_t offset_bytes = cu_q.size() * sizeof(int32_t);
  rt::memcpy_async(cu_q.data(), Device::cpu(), a.cu_seqlens_q.data, a.cu_seqlens_q.device, offset_bytes, stream);
  rt::memcpy_async(cu_k.data(), Device::cpu(), a.cu_seqlens_k.data, a.cu_seqlens_k.device, offset_bytes, stream);
  rt::stream_synchronize(stream);
  if (!every_query_sees_a_key(cu_q, cu_k, a.causal != 0)) return false;

  // The schedule (FlashInfer's kv_indptr counts rows of the head-major planes: cu_k itself).
  std::vector<int32_t> kv_len(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) kv_len[static_cast<size_t>(b)] = cu_k[static_cast<size_t>(b + 1)] - cu_k[static_cast<size_t>(b)];
  const int64_t int_bytes = paged_attention_workspace_bytes(batch, tq, hq, hk, kHeadDim).int_bytes;
  const Tensor schedule = Tensor::empty({int_bytes}, DType::u8, a.q.device, stream);
  // Never destroyed: a thread's page-locked buffer outlives the CUDA context at exit.
  thread_local HostSchedule& host = *new HostSchedule;
  void* host_schedule = host.take(int_bytes);
  flashinfer::PrefillPlanSM90Info info;
  cudaError_t status = cudaSuccess;
  try {
    status = flashinfer::PrefillSM90Plan<int32_t>(
        nullptr, 0, schedule.data(), host_schedule, static_cast<size_t>(int_bytes), info, cu_q.data(), cu_k.data(),
        kv_len.data(), static_cast<uint32_t>(tq), static_cast<uint32_t>(batch), static_cast<uint32_t>(hq),
        static_cast<uint32_t>(hk), kHeadDim, kHeadDim, /*page_size=*/1, a.causal != 0, /*enable_cuda_graph=*/false,
        static_cast<uint32_t>(dtype_size(a.q.dtype)), stream);
  } catch (const flashinfer::Error& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, VarlenAttentionArgs::kName, ": FlashInfer's Hopper schedule failed: ", e.what());
  }
  host.sent(stream);
  if (status != cudaSuccess) fk::cuda::throw_cuda_error(status, "PrefillSM90Plan");
  FK_CHECK(!info.same_schedule_for_all_heads, VarlenAttentionArgs::kName, ": ", tq,
           " query tokens took FlashInfer's per-head schedule, which is not built");

  // K and V head-major, each plane 256-byte aligned (TMA needs 16), heads zero-padded to 128.
  const int64_t elem = static_cast<int64_t>(dtype_size(a.q.dtype));
  const int vecs = static_cast<int>(a.q.shape[2] / 8);
  const int64_t plane = hk * tk * kHeadDim * elem;
  const int64_t plane_padded = (plane + 255) / 256 * 256;
  const Tensor planes = Tensor::empty({2 * plane_padded + 256}, DType::u8, a.q.device, stream);
  char* base = static_cast<char*>(planes.data());
  base += (256 - reinterpret_cast<uintptr_t>(base) % 256) % 256;
  void* k_planes = base;
  void* v_planes = base + plane_padded;
  if (tk > 0) {
    to_head_major<<<copy_blocks(tk, hk), kCopyThreads, 0, stream>>>(
        static_cast<const uint4*>(a.k.data), static_cast<const uint4*>(a.v.data), a.k.strides[0] / 8,
        a.k.strides[1] / 8, a.v.strides[0] / 8, a.v.strides[1] / 8, static_cast<uint4*>(k_planes),
        static_cast<uint4*>(v_planes), tk, static_cast<int>(hk), vecs);
    FK_CUDA_CHECK_LAUNCH();
  }
  // Narrower heads: q padded into [tq, hq, 128] and the output written there, then cut to d
  // (zero columns add nothing to q.k, and their output columns are dropped).
  const bool padded = vecs != kVecs;
  Tensor q_padded, out_padded;
  if (padded) {
    q_padded = Tensor::empty({tq, hq, kHeadDim}, a.q.dtype, a.q.device, stream);
    out_padded = Tensor::empty({tq, hq, kHeadDim}, a.q.dtype, a.q.device, stream);
    pad_heads<<<copy_blocks(tq, hq), kCopyThreads, 0, stream>>>(
        static_cast<uint4*>(const_cast<void*>(a.q.data)), a.q.strides[0] / 8, a.q.strides[1] / 8,
        static_cast<uint4*>(q_padded.data()), tq, static_cast<int>(hq), vecs, /*pad=*/true);
    FK_CUDA_CHECK_LAUNCH();
  }

  Sm90PrefillLaunch l{};
  l.dtype = a.q.dtype == DType::bf16 ? KvDType::bf16 : KvDType::f16;
  l.variant = Variant::plain;
  l.causal = a.causal != 0;
  l.q = padded ? q_padded.data() : a.q.data;
  l.q_stride_n = padded ? hq * kHeadDim : a.q.strides[0];
  l.q_stride_h = padded ? kHeadDim : a.q.strides[1];
  l.out = padded ? out_padded.data() : a.out.data;
  l.out_stride_n = padded ? 0 : a.out.strides[0];  // 0: contiguous
  l.out_stride_h = padded ? 0 : a.out.strides[1];
  l.lse = nullptr;
  l.num_q_tokens = tq;
  l.num_qo_heads = static_cast<int32_t>(hq);
  l.num_kv_heads = static_cast<int32_t>(hk);
  l.page_size = 1;
  l.window_left = -1;
  l.sm_scale = a.sm_scale;
  l.logits_soft_cap = 0.f;
  point_at_schedule(l, info, schedule.data());
  l.paged_tma = false;
  const Sm90ContiguousKv kv{k_planes, v_planes, tk};
  try {
    status = prefill_sm90_contiguous_hd128(l, kv, stream);
  } catch (const flashinfer::Error& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, VarlenAttentionArgs::kName, ": FlashInfer's Hopper ragged kernel failed: ",
            e.what());
  }
  if (status != cudaSuccess) fk::cuda::throw_cuda_error(status, "Hopper ragged prefill kernel");
  if (padded) {
    pad_heads<<<copy_blocks(tq, hq), kCopyThreads, 0, stream>>>(
        static_cast<uint4*>(a.out.data), a.out.strides[0] / 8, a.out.strides[1] / 8,
        static_cast<uint4*>(out_padded.data()), tq, static_cast<int>(hq), vecs, /*pad=*/false);
    FK_CUDA_CHECK_LAUNCH();
  }
  return true;
}

}  // namespace fk::ops::attn
