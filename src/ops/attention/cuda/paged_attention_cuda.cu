// CUDA plan and run of batch_prefill_paged_attention and batch_decode_paged_attention:
// argument checks, the plan_info record that ties a run to its plan, and the choice of
// kernel path. The kernels themselves are instantiated in prefill_sm90_hd*.cu and
// decode_hd*.cu (attention_kernels.h).
//
// Paths:
//   prefill: FlashInfer Hopper (FA3-style) paged prefill, scheduled by PrefillSM90Plan;
//            or, where it pays (contiguous_kv_policy.h), a copy of the batch's pages into
//            float_workspace and FlashInfer's ragged Hopper kernel over it.
//   decode:  FlashInfer CUDA-core decode for the GQA group sizes it is built for
//            (1, 2, 3, 4, 6, 8, 16), else the Hopper prefill kernels with one query token
//            per sequence (correct, slower).
//            (A split-KV tensor-core decode of fk's own did not beat FlashInfer's:
//            bench/results/h100/split_kv_decode_tc.json.)
#include "ops/attention/cuda/flashinfer_compat.cuh"  // first: before any FlashInfer header

#include <flashinfer/attention/scheduler.cuh>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <flashinfer/exception.h>
#include <vector>

#include "fk/cuda/check.h"
#include "fk/cuda/sm_count.h"
#include "fk/op_registry.h"
#include "fk/ops/attention.h"
#include "ops/attention/attention_validate.h"
#include "ops/attention/contiguous_kv_policy.h"
#include "ops/attention/cuda/attention_kernels.h"
#include "ops/attention/cuda/sm90_schedule.cuh"
#include "ops/attention/attention_variants.h"
#include "ops/attention/paged_batch.h"
#include "ops/common/pdl_variant.h"
#include "core/cuda/pdl_scope.h"

namespace fk::ops::attn {
namespace {

// ---- plan_info: what a plan was made for, and FlashInfer's plan ------------------------
constexpr int64_t kPlanMagic = 0x666b61746e310002;  // changes when the layout below changes

enum class Path : int64_t { empty = 0, sm90_prefill = 1, fa2_decode = 2, sm90_contiguous_kv = 4 };

enum Slot : int {
  kSlotMagic = 0,
  kSlotPath,
  kSlotBatch,
  kSlotTokens,
  kSlotQoHeads,
  kSlotKvHeads,
  kSlotHeadDim,
  kSlotPageSize,
  kSlotDType,
  kSlotVariant,
  kSlotCausal,
  kSlotCudaGraph,
  kSlotIntWorkspace,    // the int_workspace the schedule was copied to (address)
  kSlotFloatWorkspace,  // the float_workspace the plan laid out (address; 0 = unused)
  kSlotFlashInfer = 16,  // FlashInfer's plan info (ToVector), up to 16 values
};
static_assert(kSlotFlashInfer + 16 <= kAttentionPlanInfoLen);
constexpr int kSm90InfoLen = 9;           // PrefillPlanSM90Info::ToVector()
constexpr int kSm90InfoRows = kSm90InfoLen;  // contiguous-KV path: its copy's rows, after FlashInfer's info

// The metadata a plan is valid for: run must present the same.
struct PlanKey {
  int64_t batch, tokens, qo_heads, kv_heads, head_dim, page_size, dtype, variant, causal, cuda_graph;
  const void* int_workspace;
  const void* float_workspace;
};

PlanKey key_of(const CommonArgs& c, bool causal, int32_t cuda_graph) {
  return {c.kv_indptr.shape[0] - 1,
          c.q.shape[0],
          c.q.shape[1],
          c.k_cache.shape[2],
          c.q.shape[2],
          c.k_cache.shape[1],
          static_cast<int64_t>(c.q.dtype),
          static_cast<int64_t>(choose_variant(c.logits_soft_cap, c.window_left)),
          causal ? 1 : 0,
          cuda_graph,
          c.int_workspace.data,
          c.float_workspace.data};
}

int64_t* slots(const TensorView& plan_info) { return static_cast<int64_t*>(plan_info.data); }

void write_plan(const TensorView& plan_info, Path path, const PlanKey& k, const int64_t* flashinfer_info, int n) {
  int64_t* s = slots(plan_info);
  std::fill(s, s + kAttentionPlanInfoLen, 0);
  s[kSlotPath] = static_cast<int64_t>(path);
  s[kSlotBatch] = k.batch;
  s[kSlotTokens] = k.tokens;
  s[kSlotQoHeads] = k.qo_heads;
  s[kSlotKvHeads] = k.kv_heads;
  s[kSlotHeadDim] = k.head_dim;
  s[kSlotPageSize] = k.page_size;
  s[kSlotDType] = k.dtype;
  s[kSlotVariant] = k.variant;
  s[kSlotCausal] = k.causal;
  s[kSlotCudaGraph] = k.cuda_graph;
  s[kSlotIntWorkspace] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(k.int_workspace));
  s[kSlotFloatWorkspace] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(k.float_workspace));
  for (int i = 0; i < n; ++i) s[kSlotFlashInfer + i] = flashinfer_info[i];
  s[kSlotMagic] = kPlanMagic;  // last: a plan that failed half-way leaves no valid record
}

// Checks that plan_info holds a plan for exactly this call; returns its path.
Path expect_plan(const char* op, const TensorView& plan_info, const PlanKey& k) {
  const int64_t* s = slots(plan_info);
  FK_CHECK(s[kSlotMagic] == kPlanMagic, op,
           ": plan_info holds no plan; call the op's plan (OpRegistry::plan) with these arguments before run");
  struct Field {
    const char* name;
    int slot;
    int64_t want;
  };
  const Field fields[] = {
      {"batch size", kSlotBatch, k.batch},
      {"query tokens", kSlotTokens, k.tokens},
      {"query heads", kSlotQoHeads, k.qo_heads},
      {"KV heads", kSlotKvHeads, k.kv_heads},
      {"head dim", kSlotHeadDim, k.head_dim},
      {"page size", kSlotPageSize, k.page_size},
      {"dtype", kSlotDType, k.dtype},
      {"variant (window / soft-cap on or off)", kSlotVariant, k.variant},
      {"causal", kSlotCausal, k.causal},
      {"cuda_graph", kSlotCudaGraph, k.cuda_graph},
      {"int_workspace address", kSlotIntWorkspace,
       static_cast<int64_t>(reinterpret_cast<uintptr_t>(k.int_workspace))},
  };
  for (const Field& f : fields)
    FK_CHECK(s[f.slot] == f.want, op, ": the plan in plan_info was made for ", f.name, " ", s[f.slot],
             " but this call has ", f.want, "; plan again after the metadata changes");
  const int64_t float_ws = s[kSlotFloatWorkspace];
  FK_CHECK(float_ws == 0 || float_ws == static_cast<int64_t>(reinterpret_cast<uintptr_t>(k.float_workspace)), op,
           ": float_workspace is not the one the plan laid out; plan again with this workspace");
  return static_cast<Path>(s[kSlotPath]);
}

// ---- checks the CUDA kernels add to the common validation -------------------------------
bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

void validate_cuda_support(const CommonArgs& c) {
  const int64_t D = c.q.shape[2];
  if (D != 64 && D != 128 && D != 256)
    FK_FAIL(FK_ERR_UNSUPPORTED, c.op, ": the CUDA kernels support head dims 64, 128 and 256, got ", D);
  // 16-byte vector loads of q rows (and the TMA descriptor of q on Hopper).
  FK_CHECK(aligned16(c.q.data) && c.q.strides[0] % 8 == 0 && c.q.strides[1] % 8 == 0, c.op,
           ": q must be 16-byte aligned with token and head strides that are multiples of 8 elements, got ",
           describe(c.q), " strides [", c.q.strides[0], ", ", c.q.strides[1], ", ", c.q.strides[2], "]");
  FK_CHECK(aligned16(c.out.data) && aligned16(c.k_cache.data) && aligned16(c.v_cache.data), c.op,
           ": out, k_cache and v_cache must be 16-byte aligned");
  const int64_t page_elems = c.k_cache.shape[1] * c.k_cache.shape[2] * c.k_cache.shape[3];
  FK_CHECK(c.q.shape[0] < (int64_t{1} << 31) && page_elems < (int64_t{1} << 31), c.op,
           ": more than 2^31 query tokens or a page of more than 2^31 elements");
}

KvDType kv_dtype(const TensorView& q) { return q.dtype == DType::bf16 ? KvDType::bf16 : KvDType::f16; }

// FlashInfer reports problems (a workspace too small, an unsupported configuration) by
// throwing flashinfer::Error: name the op and what it was doing.
template <class F>
void flashinfer_call(const char* op, const char* what, F&& f) {
  cudaError_t status = cudaSuccess;
  try {
    status = f();
  } catch (const flashinfer::Error& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, op, ": ", what, " failed: ", e.what(),
            " (paged_attention_workspace_bytes gives workspace sizes that suffice)");
  }
  if (status != cudaSuccess) fk::cuda::throw_cuda_error(status, what);
}

size_t int_workspace_bytes(const CommonArgs& c) {
  return static_cast<size_t>(std::min(c.int_workspace.nbytes(), c.host_int_workspace.nbytes()));
}

// ---- Hopper prefill over contiguous KV ---------------------------------------------------
bool plan_contiguous_kv(const CommonArgs& c, const PagedBatch& pb, bool causal, bool cuda_graph) {
  ContiguousKvRequest r;
  r.head_dim = c.q.shape[2];
  r.page_size = pb.page_size;
  r.num_qo_heads = c.q.shape[1];
  r.num_kv_heads = c.k_cache.shape[2];
  r.sm_count = fk::cuda::current_sm_count();
  r.dtype_bytes = dtype_size(c.q.dtype);
  r.float_workspace_bytes = c.float_workspace.nbytes();
  r.cuda_graph = cuda_graph;
  r.causal = causal;
  r.window_left = c.window_left;
  return choose_contiguous_kv(pb, r, contiguous_kv_mode());
}

void run_sm90_contiguous(const CommonArgs& c, const Sm90PrefillLaunch& l, int64_t rows, cudaStream_t stream) {
  const int64_t plane_bytes = rows * l.num_kv_heads * c.q.shape[2] * dtype_size(c.q.dtype);
  FK_CHECK(prefill_contiguous_kv_bytes(rows, l.num_kv_heads, c.q.shape[2]) <= c.float_workspace.nbytes(), c.op,
           ": float_workspace is smaller than the plan's contiguous KV copy; plan again with this workspace");
  // 256-byte aligned planes (cudaMalloc's alignment, and what TMA needs: 16).
  char* base = static_cast<char*>(c.float_workspace.data);
  base += (256 - reinterpret_cast<uintptr_t>(base) % 256) % 256;
  GatherKvPages g{};
  g.k_cache = c.k_cache.data;
  g.v_cache = c.v_cache.data;
  g.kv_indptr = static_cast<const int32_t*>(c.kv_indptr.data);
  g.kv_indices = static_cast<const int32_t*>(c.kv_indices.data);
  g.kv_last_page_len = static_cast<const int32_t*>(c.kv_last_page_len.data);
  g.batch = static_cast<int32_t>(c.kv_indptr.shape[0] - 1);
  g.page_size = l.page_size;
  g.num_kv_heads = l.num_kv_heads;
  g.head_dim = static_cast<int32_t>(c.q.shape[2]);
  g.rows = rows;
  g.k_out = base;
  g.v_out = base + plane_bytes;
  cudaError_t status = gather_kv_pages(g, stream);
  if (status != cudaSuccess) fk::cuda::throw_cuda_error(status, "KV page copy");
  const Sm90ContiguousKv kv{g.k_out, g.v_out, rows};
  flashinfer_call(c.op, "Hopper contiguous-KV prefill kernel", [&] { return prefill_sm90_contiguous_hd128(l, kv, stream); });
}

// ---- Hopper prefill path --------------------------------------------------------------
// Schedules the batch on the host (PrefillSM90Plan) and copies the schedule to
// int_workspace; writes FlashInfer's plan info (kSm90InfoLen values) to `info_out`. The
// schedule's kv_indptr is the page indptr times `kv_indptr_scale`: 1 for the paged
// kernels, page_size for the contiguous-KV path (rows of the copy).
void plan_sm90(const CommonArgs& c, const PagedBatch& pb, bool causal, bool cuda_graph, int64_t* info_out,
               cudaStream_t stream, int32_t kv_indptr_scale = 1) {
  std::vector<int32_t> qo_indptr = pb.qo_indptr, kv_indptr = pb.kv_indptr, kv_len = pb.kv_len;
  for (int32_t& x : kv_indptr) x *= kv_indptr_scale;
  const int64_t D = c.q.shape[2];
  flashinfer::PrefillPlanSM90Info info;
  flashinfer_call(c.op, "PrefillSM90Plan", [&] {
    return flashinfer::PrefillSM90Plan<int32_t>(
        c.float_workspace.data, static_cast<size_t>(c.float_workspace.nbytes()), c.int_workspace.data,
        c.host_int_workspace.data, int_workspace_bytes(c), info, qo_indptr.data(), kv_indptr.data(), kv_len.data(),
        static_cast<uint32_t>(pb.num_q_tokens()), static_cast<uint32_t>(pb.size()),
        static_cast<uint32_t>(c.q.shape[1]), static_cast<uint32_t>(c.k_cache.shape[2]), static_cast<uint32_t>(D),
        static_cast<uint32_t>(D), static_cast<uint32_t>(pb.page_size), causal, cuda_graph,
        static_cast<uint32_t>(dtype_size(c.q.dtype)), stream);
  });
  // Beyond 4096 query tiles per head FlashInfer switches to a per-head schedule whose
  // kernels we do not instantiate (~512k query tokens in one batch).
  if (info.same_schedule_for_all_heads)
    FK_FAIL(FK_ERR_UNSUPPORTED, c.op, ": ", pb.num_q_tokens(), " query tokens in one batch is more than supported; ",
            "split the batch");
  const std::vector<int64_t> v = info.ToVector();
  std::copy(v.begin(), v.end(), info_out);
}

// Runs the Hopper prefill on a plan_sm90 schedule: over the paged caches, or, with
// contiguous_rows > 0, over the copy of the pages that it first makes into float_workspace.
void run_sm90(const CommonArgs& c, bool causal, const int64_t* flashinfer_info, cudaStream_t stream,
              int64_t contiguous_rows = 0) {
  flashinfer::PrefillPlanSM90Info info;
  info.FromVector(std::vector<int64_t>(flashinfer_info, flashinfer_info + kSm90InfoLen));
  Sm90PrefillLaunch l{};
  l.dtype = kv_dtype(c.q);
  l.variant = choose_variant(c.logits_soft_cap, c.window_left);
  l.causal = causal;
  l.q = c.q.data;
  l.q_stride_n = c.q.strides[0];
  l.q_stride_h = c.q.strides[1];
  l.k_cache = c.k_cache.data;
  l.v_cache = c.v_cache.data;
  l.num_pages = c.k_cache.shape[0];
  l.kv_indices = static_cast<const int32_t*>(c.kv_indices.data);
  l.out = c.out.data;
  l.lse = has_lse(c.lse) ? static_cast<float*>(c.lse.data) : nullptr;
  l.num_q_tokens = c.q.shape[0];
  l.num_qo_heads = static_cast<int32_t>(c.q.shape[1]);
  l.num_kv_heads = static_cast<int32_t>(c.k_cache.shape[2]);
  l.page_size = static_cast<int32_t>(c.k_cache.shape[1]);
  l.window_left = c.window_left;
  l.sm_scale = c.sm_scale;
  l.logits_soft_cap = c.logits_soft_cap;
  point_at_schedule(l, info, c.int_workspace.data);
  l.paged_tma = !paged_tma_off(c.op);
  if (contiguous_rows > 0) {
    run_sm90_contiguous(c, l, contiguous_rows, stream);
    return;
  }
  cudaError_t status = cudaErrorInvalidValue;
  flashinfer_call(c.op, "Hopper paged prefill kernel", [&] {
    switch (c.q.shape[2]) {
      case 64: status = prefill_sm90_hd64(l, stream); break;
      case 128: status = prefill_sm90_hd128(l, stream); break;
      case 256: status = prefill_sm90_hd256(l, stream); break;
    }
    return status;
  });
}

// ---- CUDA-core decode path --------------------------------------------------------------
void plan_fa2_decode(const CommonArgs& c, const PagedBatch& pb, int32_t graph_grid, int64_t* info_out,
                     cudaStream_t stream) {
  std::vector<int32_t> kv_indptr = pb.kv_indptr;
  DecodePlanRequest r{};
  r.dtype = kv_dtype(c.q);
  r.variant = choose_variant(c.logits_soft_cap, c.window_left);
  r.kv_indptr_host = kv_indptr.data();
  r.batch = static_cast<int32_t>(pb.size());
  r.num_qo_heads = static_cast<int32_t>(c.q.shape[1]);
  r.num_kv_heads = static_cast<int32_t>(c.k_cache.shape[2]);
  r.page_size = static_cast<int32_t>(pb.page_size);
  r.graph_grid = graph_grid;
  r.float_workspace = c.float_workspace.data;
  r.float_bytes = static_cast<size_t>(c.float_workspace.nbytes());
  r.int_workspace = c.int_workspace.data;
  r.host_int_workspace = c.host_int_workspace.data;
  r.int_bytes = int_workspace_bytes(c);
  r.plan_out = info_out;
  flashinfer_call(c.op, "DecodePlan", [&] {
    switch (c.q.shape[2]) {
      case 64: return decode_plan_hd64(r, stream);
      case 128: return decode_plan_hd128(r, stream);
      default: return decode_plan_hd256(r, stream);
    }
  });
}

// The decode launch's fields that come straight from the op's arguments.
void fill_decode_launch(DecodeLaunch& l, const CommonArgs& c) {
  l.dtype = kv_dtype(c.q);
  l.q = c.q.data;
  l.q_stride_n = c.q.strides[0];
  l.q_stride_h = c.q.strides[1];
  l.k_cache = c.k_cache.data;
  l.v_cache = c.v_cache.data;
  l.kv_indptr = static_cast<const int32_t*>(c.kv_indptr.data);
  l.kv_indices = static_cast<const int32_t*>(c.kv_indices.data);
  l.out = c.out.data;
  l.lse = has_lse(c.lse) ? static_cast<float*>(c.lse.data) : nullptr;
  l.batch = static_cast<int32_t>(c.kv_indptr.shape[0] - 1);
  l.num_qo_heads = static_cast<int32_t>(c.q.shape[1]);
  l.num_kv_heads = static_cast<int32_t>(c.k_cache.shape[2]);
  l.page_size = static_cast<int32_t>(c.k_cache.shape[1]);
  l.sm_scale = c.sm_scale;
  l.logits_soft_cap = c.logits_soft_cap;
}

void run_fa2_decode(const CommonArgs& c, const int64_t* flashinfer_info, cudaStream_t stream) {
  DecodeLaunch l{};
  fill_decode_launch(l, c);
  l.variant = choose_variant(c.logits_soft_cap, c.window_left);
  l.kv_last_page_len = static_cast<const int32_t*>(c.kv_last_page_len.data);
  l.window_left = c.window_left;
  l.float_workspace = c.float_workspace.data;
  l.int_workspace = c.int_workspace.data;
  l.plan = flashinfer_info;
  flashinfer_call(c.op, "paged decode kernel", [&] {
    switch (c.q.shape[2]) {
      case 64: return decode_run_hd64(l, stream);
      case 128: return decode_run_hd128(l, stream);
      default: return decode_run_hd256(l, stream);
    }
  });
}

// ---- entry points -----------------------------------------------------------------------
using PrefillArgs = BatchPrefillPagedAttentionArgs;
using DecodeArgs = BatchDecodePagedAttentionArgs;

fk_status prefill_plan(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const PrefillArgs*>(args);
    validate_prefill(a, DeviceType::cuda);
    const CommonArgs c = common_args(a);
    validate_cuda_support(c);
    const PagedBatch pb = read_paged_batch(a.kName, &a.qo_indptr_host, a.kv_indptr_host, a.kv_last_page_len_host,
                                           a.q.shape[0], a.kv_indices.shape[0], a.k_cache.shape[1]);
    PlanKey key = key_of(c, a.causal != 0, a.cuda_graph);
    key.float_workspace = nullptr;  // the Hopper prefill path needs none
    if (pb.num_q_tokens() == 0) {
      write_plan(a.plan_info, Path::empty, key, nullptr, 0);
      return;
    }
    int64_t info[16] = {};
    const auto s = static_cast<cudaStream_t>(stream);
    if (plan_contiguous_kv(c, pb, a.causal != 0, a.cuda_graph != 0)) {
      plan_sm90(c, pb, a.causal != 0, /*cuda_graph=*/false, info, s, static_cast<int32_t>(pb.page_size));
      info[kSm90InfoRows] = contiguous_kv_rows(pb);
      key.float_workspace = c.float_workspace.data;  // holds the copy
      write_plan(a.plan_info, Path::sm90_contiguous_kv, key, info, kSm90InfoLen + 1);
      return;
    }
    plan_sm90(c, pb, a.causal != 0, a.cuda_graph != 0, info, s);
    write_plan(a.plan_info, Path::sm90_prefill, key, info, kSm90InfoLen);
  });
}

fk_status prefill_run(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const PrefillArgs*>(args);
    validate_prefill(a, DeviceType::cuda);
    const CommonArgs c = common_args(a);
    validate_cuda_support(c);
    const Path path = expect_plan(a.kName, a.plan_info, key_of(c, a.causal != 0, a.cuda_graph));
    if (path == Path::empty) return;
    const int64_t* info = slots(a.plan_info) + kSlotFlashInfer;
    const int64_t rows = path == Path::sm90_contiguous_kv ? info[kSm90InfoRows] : 0;
    run_sm90(c, a.causal != 0, info, static_cast<cudaStream_t>(stream), rows);
  });
}

fk_status decode_plan(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const DecodeArgs*>(args);
    validate_decode(a, DeviceType::cuda);
    const CommonArgs c = common_args(a);
    validate_cuda_support(c);
    const PagedBatch pb = read_paged_batch(a.kName, nullptr, a.kv_indptr_host, a.kv_last_page_len_host,
                                           a.q.shape[0], a.kv_indices.shape[0], a.k_cache.shape[1]);
    PlanKey key = key_of(c, /*causal=*/true, a.cuda_graph);
    if (pb.size() == 0) {
      key.float_workspace = nullptr;
      write_plan(a.plan_info, Path::empty, key, nullptr, 0);
      return;
    }
    int64_t info[16] = {};
    const auto s = static_cast<cudaStream_t>(stream);
    if (decode_kernel_supports_group(c.q.shape[1] / c.k_cache.shape[2])) {
      plan_fa2_decode(c, pb, a.cuda_graph, info, s);
      write_plan(a.plan_info, Path::fa2_decode, key, info, kDecodePlanInfoLen);
    } else {
      // The query is the sequence's last token: causal masking is a no-op.
      plan_sm90(c, pb, /*causal=*/true, a.cuda_graph != 0, info, s);
      key.float_workspace = nullptr;
      write_plan(a.plan_info, Path::sm90_prefill, key, info, kSm90InfoLen);
    }
  });
}

fk_status decode_run(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const DecodeArgs*>(args);
    validate_decode(a, DeviceType::cuda);
    const CommonArgs c = common_args(a);
    validate_cuda_support(c);
    const Path path = expect_plan(a.kName, a.plan_info, key_of(c, /*causal=*/true, a.cuda_graph));
    const int64_t* info = slots(a.plan_info) + kSlotFlashInfer;
    const auto s = static_cast<cudaStream_t>(stream);
    const fk::cuda::PdlOffScope pdl(pdl_off_for(a.kName));
    if (path == Path::fa2_decode) run_fa2_decode(c, info, s);
    else if (path == Path::sm90_prefill) run_sm90(c, /*causal=*/true, info, s);
  });
}

FK_REGISTER_PLAN("batch_prefill_paged_attention", cuda, prefill_plan);
FK_REGISTER_IMPL("batch_prefill_paged_attention", cuda, prefill_run);
FK_REGISTER_PLAN("batch_decode_paged_attention", cuda, decode_plan);
FK_REGISTER_IMPL("batch_decode_paged_attention", cuda, decode_run);

}  // namespace
}  // namespace fk::ops::attn
