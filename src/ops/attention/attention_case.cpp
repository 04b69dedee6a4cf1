#include "ops/attention/attention_case.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "fk/element.h"
#include "fk/philox.h"
#include "fk/ops/attention.h"
#include "ops/attention/visible_keys.h"
#include "ops/common/case_builder.h"

namespace fk::ops::attn {

int64_t PagedWorkload::num_q_tokens() const { return std::accumulate(qo_lens.begin(), qo_lens.end(), int64_t{0}); }

int64_t PagedWorkload::visible(int64_t b, int64_t i) const {
  return visible_keys(qo_lens[b], kv_lens[b], i, causal, window_left);
}

int64_t PagedWorkload::kv_tokens_read(int64_t b) const {
  if (qo_lens[b] == 0) return 0;
  const int64_t first = kv_lens[b] - qo_lens[b];
  const int64_t lo = window_left >= 0 ? std::max<int64_t>(0, first - window_left) : 0;
  return kv_lens[b] - lo;
}

PagedWorkload parse_paged_workload(const Json& w, bool decode) {
  PagedWorkload pw;
  pw.decode = decode;
  pw.kv_lens = wl_int_list(w, "kv_lens");
  pw.qo_lens = decode ? std::vector<int64_t>(pw.kv_lens.size(), 1) : wl_int_list(w, "qo_lens");
  FK_CHECK(pw.qo_lens.size() == pw.kv_lens.size(), "workload ", w.dump(), ": qo_lens and kv_lens differ in length");
  for (size_t b = 0; b < pw.kv_lens.size(); ++b)
    FK_CHECK(pw.qo_lens[b] >= 0 && pw.kv_lens[b] >= pw.qo_lens[b] && pw.kv_lens[b] < (int64_t{1} << 30),
             "workload ", w.dump(), ": sequence ", b, " needs 0 <= qo_len <= kv_len < 2^30");
  pw.num_qo_heads = wl_int(w, "num_qo_heads", 32);
  pw.num_kv_heads = wl_int(w, "num_kv_heads", 8);
  pw.head_dim = wl_int(w, "head_dim", 128);
  pw.page_size = wl_int(w, "page_size", 16);
  pw.extra_pages = wl_int(w, "extra_pages", 2);
  pw.dtype = wl_dtype(w);
  FK_CHECK(pw.num_qo_heads > 0 && pw.num_kv_heads > 0 && pw.num_qo_heads % pw.num_kv_heads == 0 &&
               pw.head_dim > 0 && pw.page_size > 0 && pw.extra_pages >= 0,
           "workload ", w.dump(), ": needs heads > 0 with num_qo_heads % num_kv_heads == 0, head_dim > 0, "
           "page_size > 0, extra_pages >= 0");
  pw.sm_scale = wl_float(w, "sm_scale", 1.0 / std::sqrt(static_cast<double>(pw.head_dim)));
  pw.soft_cap = wl_float(w, "logits_soft_cap", 0.0);
  pw.window_left = wl_int(w, "window_left", -1);
  pw.causal = decode ? true : wl_bool(w, "causal", true);
  if (w.contains("cuda_graph") && w["cuda_graph"].is_number_integer())
    pw.cuda_graph = w["cuda_graph"].get<int32_t>();
  else
    pw.cuda_graph = wl_bool(w, "cuda_graph", false) ? 1 : 0;
  pw.nan_past_end = wl_bool(w, "nan_past_end", false);
  return pw;
}

namespace {

Tensor i32_vector(const std::vector<int32_t>& v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::i32);
  std::copy(v.begin(), v.end(), t.data_as<int32_t>());
  return t;
}

// Philox stream ids of the case's random inputs.
enum : uint64_t { kStreamQ = 1, kStreamK = 2, kStreamV = 3, kStreamPages = 4 };

// NaN in 16-bit float (f16 and bf16 both quiet-NaN patterns).
uint16_t nan_bits(DType dtype) { return dtype == DType::bf16 ? 0x7fc0 : 0x7e00; }

// Every K and V slot past a sequence's last token in its last page, and every page no
// sequence owns (perm[used_pages:]), becomes NaN.
void fill_unread_slots_with_nan(const PagedWorkload& pw, const std::vector<int32_t>& kv_indptr,
                                const std::vector<int32_t>& perm, int64_t used_pages, PagedCaseTensors& t) {
  const int64_t ps = pw.page_size, row = pw.num_kv_heads * pw.head_dim;
  const uint16_t nan = nan_bits(pw.dtype);
  auto poison_rows = [&](int64_t page, int64_t from_row) {
    for (Tensor* cache : {&t.k_cache, &t.v_cache}) {
      uint16_t* p = static_cast<uint16_t*>(cache->data()) + page * ps * row;
      std::fill(p + from_row * row, p + ps * row, nan);
    }
  };
  for (int64_t b = 0; b < pw.batch(); ++b) {
    const int64_t pages = kv_indptr[b + 1] - kv_indptr[b];
    if (pages > 0) poison_rows(perm[kv_indptr[b + 1] - 1], pw.kv_lens[b] - (pages - 1) * ps);
  }
  for (size_t i = static_cast<size_t>(used_pages); i < perm.size(); ++i) poison_rows(perm[i], 0);
}

}  // namespace

PagedCaseTensors make_paged_tensors(const PagedWorkload& pw, uint64_t seed) {
  const int64_t B = pw.batch(), T = pw.num_q_tokens();
  const int64_t Hq = pw.num_qo_heads, Hk = pw.num_kv_heads, D = pw.head_dim, ps = pw.page_size;

  // Pages: the sequences take the first pages of a random permutation of the cache, in
  // order, so a sequence's pages are scattered and never contiguous by accident.
  std::vector<int32_t> qo_indptr{0}, kv_indptr{0}, last_page_len;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t pages = (pw.kv_lens[b] + ps - 1) / ps;
    qo_indptr.push_back(static_cast<int32_t>(qo_indptr.back() + pw.qo_lens[b]));
    kv_indptr.push_back(static_cast<int32_t>(kv_indptr.back() + pages));
    last_page_len.push_back(static_cast<int32_t>(pages == 0 ? 1 : pw.kv_lens[b] - (pages - 1) * ps));
  }
  const int64_t used_pages = kv_indptr.back();
  const int64_t num_pages = used_pages + pw.extra_pages;
  FK_CHECK(num_pages < (int64_t{1} << 31), "paged attention workload needs ", num_pages, " pages, more than 2^31");
  std::vector<int32_t> perm(num_pages);
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t i = num_pages - 1; i > 0; --i)
    std::swap(perm[i], perm[philox_int(seed, kStreamPages, static_cast<uint64_t>(i), 0, i + 1)]);
  std::vector<int32_t> kv_indices(perm.begin(), perm.begin() + used_pages);

  PagedCaseTensors t;
  t.out = Tensor::empty({T, Hq, D}, pw.dtype);
  t.lse = Tensor::empty({T, Hq}, DType::f32);
  t.q = random_tensor({T, Hq, D}, pw.dtype, seed, kStreamQ, -1.f, 1.f);
  // Every slot of the cache holds data, including slots past a sequence's end and pages
  // nobody owns: reading them changes the result.
  t.k_cache = random_tensor({num_pages, ps, Hk, D}, pw.dtype, seed, kStreamK, -1.f, 1.f);
  t.v_cache = random_tensor({num_pages, ps, Hk, D}, pw.dtype, seed, kStreamV, -1.f, 1.f);
  if (pw.nan_past_end) fill_unread_slots_with_nan(pw, kv_indptr, perm, used_pages, t);
  if (!pw.decode) {
    t.qo_indptr = i32_vector(qo_indptr);
    t.qo_indptr_host = i32_vector(qo_indptr);
  }
  t.kv_indptr = i32_vector(kv_indptr);
  t.kv_indices = i32_vector(kv_indices);
  t.kv_last_page_len = i32_vector(last_page_len);
  t.kv_indptr_host = i32_vector(kv_indptr);
  t.kv_last_page_len_host = i32_vector(last_page_len);
  // Prefill cases leave room for the contiguous-KV copy of their pages (decode never takes it).
  const int64_t copy_rows = pw.decode ? 0 : used_pages * ps;
  const PagedAttentionWorkspaceBytes ws = paged_attention_workspace_bytes(B, T, Hq, Hk, D, copy_rows);
  t.float_workspace = Tensor::empty({ws.float_bytes}, DType::u8);
  t.int_workspace = Tensor::empty({ws.int_bytes}, DType::u8);
  t.host_int_workspace = Tensor::empty({ws.int_bytes}, DType::u8);
  t.plan_info = Tensor::zeros({kAttentionPlanInfoLen}, DType::i64);
  return t;
}

OpCost paged_attention_cost(const PagedWorkload& pw) {
  const double elt = static_cast<double>(dtype_size(pw.dtype));
  const double Hq = static_cast<double>(pw.num_qo_heads), Hk = static_cast<double>(pw.num_kv_heads);
  const double D = static_cast<double>(pw.head_dim);
  double kv_tokens = 0, visible = 0;
  for (int64_t b = 0; b < pw.batch(); ++b) {
    kv_tokens += static_cast<double>(pw.kv_tokens_read(b));
    for (int64_t i = 0; i < pw.qo_lens[b]; ++i) visible += static_cast<double>(pw.visible(b, i));
  }
  const double T = static_cast<double>(pw.num_q_tokens());
  OpCost c;
  c.bytes = kv_tokens * Hk * D * 2 * elt + 2 * T * Hq * D * elt + T * Hq * 4;
  c.flops = 2.0 * 2.0 * visible * Hq * D;
  c.math_dtype = pw.dtype;
  return c;
}

Tolerance paged_attention_tolerance(const TensorArg& arg, DType dtype) {
  if (arg.name == "lse") return {2e-3, 2e-3};
  return default_tolerance(dtype);
}

}  // namespace fk::ops::attn
