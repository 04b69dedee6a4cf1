// CPU references of the paged attention ops, in double: straightforward loops over
// sequences, query tokens, heads and visible KV positions. They are the CPU backend
// (outputs in the engine's dtype) and the oracle (f64 outputs) at once.
#include <algorithm>
#include <cmath>
#include <vector>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/attention.h"
#include "ops/attention/attention_validate.h"
#include "ops/attention/paged_batch.h"

namespace fk::ops::attn {
namespace {

struct Masking {
  double sm_scale;
  double soft_cap;      // 0 = none
  int64_t window_left;  // -1 = none
  bool causal;
};

// The page holding KV position `pos` of sequence b, checked against the cache size.
int64_t page_of(const CommonArgs& a, const PagedBatch& pb, int64_t b, int64_t pos) {
  const int64_t entry = pb.kv_indptr[b] + pos / pb.page_size;
  const int64_t page = get_index(a.kv_indices, entry);
  FK_CHECK(page >= 0 && page < a.k_cache.shape[0], a.op, ": kv_indices[", entry, "] = ", page,
           " is not a page of the cache [0, ", a.k_cache.shape[0], ") (sequence ", b, ")");
  return page;
}

void attention_reference(const CommonArgs& a, const PagedBatch& pb, const Masking& m) {
  const int64_t Hq = a.q.shape[1], D = a.q.shape[2], Hk = a.k_cache.shape[2];
  const int64_t group = Hq / Hk;
  const bool want_lse = has_lse(a.lse);
  std::vector<double> K, V, q(D), s, o(D);
  for (int64_t b = 0; b < pb.size(); ++b) {
    const int64_t kv_len = pb.kv_len[b], qo_len = pb.qo_len(b);
    if (qo_len == 0) continue;
    // This sequence's keys and values in double, [kv_len, Hk, D].
    K.assign(kv_len * Hk * D, 0.0);
    V.assign(kv_len * Hk * D, 0.0);
    for (int64_t pos = 0; pos < kv_len; ++pos) {
      const int64_t page = page_of(a, pb, b, pos), slot = pos % pb.page_size;
      for (int64_t h = 0; h < Hk; ++h)
        for (int64_t d = 0; d < D; ++d) {
          K[(pos * Hk + h) * D + d] = get(a.k_cache, page, slot, h, d);
          V[(pos * Hk + h) * D + d] = get(a.v_cache, page, slot, h, d);
        }
    }
    s.resize(kv_len);
    for (int64_t i = 0; i < qo_len; ++i) {
      const int64_t t = pb.qo_indptr[b] + i;
      const int64_t p = kv_len - qo_len + i;  // the query's position in its sequence
      const int64_t hi = m.causal ? p + 1 : kv_len;
      const int64_t lo = m.window_left >= 0 ? std::max<int64_t>(0, p - m.window_left) : 0;
      for (int64_t h = 0; h < Hq; ++h) {
        const int64_t kh = h / group;
        for (int64_t d = 0; d < D; ++d) q[d] = get(a.q, t, h, d);
        double s_max = -INFINITY;
        for (int64_t j = lo; j < hi; ++j) {
          const double* k = &K[(j * Hk + kh) * D];
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += q[d] * k[d];
          double logit = m.sm_scale * dot;
          if (m.soft_cap > 0) logit = m.soft_cap * std::tanh(logit / m.soft_cap);
          s[j] = logit;
          s_max = std::max(s_max, logit);
        }
        double sum = 0;
        std::fill(o.begin(), o.end(), 0.0);
        for (int64_t j = lo; j < hi; ++j) {
          const double e = std::exp(s[j] - s_max);
          sum += e;
          const double* v = &V[(j * Hk + kh) * D];
          for (int64_t d = 0; d < D; ++d) o[d] += e * v[d];
        }
        // lo < hi always holds (a query sees at least itself); guard anyway.
        const double inv = sum > 0 ? 1.0 / sum : 0.0;
        for (int64_t d = 0; d < D; ++d) set(a.out, o[d] * inv, t, h, d);
        if (want_lse) set(a.lse, sum > 0 ? (s_max + std::log(sum)) / std::log(2.0) : -INFINITY, t, h);
      }
    }
  }
}

fk_status prefill_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const BatchPrefillPagedAttentionArgs*>(args);
    validate_prefill(a, DeviceType::cpu);
    const CommonArgs c = common_args(a);
    expect_same_values(a.kName, "qo_indptr_host", a.qo_indptr_host, "qo_indptr", a.qo_indptr);
    expect_same_values(a.kName, "kv_indptr_host", a.kv_indptr_host, "kv_indptr", a.kv_indptr);
    expect_same_values(a.kName, "kv_last_page_len_host", a.kv_last_page_len_host, "kv_last_page_len",
                       a.kv_last_page_len);
    const PagedBatch pb = read_paged_batch(a.kName, &a.qo_indptr, a.kv_indptr, a.kv_last_page_len, a.q.shape[0],
                                           a.kv_indices.shape[0], a.k_cache.shape[1]);
    attention_reference(c, pb, {a.sm_scale, a.logits_soft_cap, a.window_left, a.causal != 0});
  });
}

fk_status decode_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const BatchDecodePagedAttentionArgs*>(args);
    validate_decode(a, DeviceType::cpu);
    const CommonArgs c = common_args(a);
    expect_same_values(a.kName, "kv_indptr_host", a.kv_indptr_host, "kv_indptr", a.kv_indptr);
    expect_same_values(a.kName, "kv_last_page_len_host", a.kv_last_page_len_host, "kv_last_page_len",
                       a.kv_last_page_len);
    const PagedBatch pb = read_paged_batch(a.kName, nullptr, a.kv_indptr, a.kv_last_page_len, a.q.shape[0],
                                           a.kv_indices.shape[0], a.k_cache.shape[1]);
    // The one query token is the last KV token: causal masking changes nothing.
    attention_reference(c, pb, {a.sm_scale, a.logits_soft_cap, a.window_left, true});
  });
}

FK_REGISTER_IMPL("batch_prefill_paged_attention", cpu, prefill_cpu);
FK_REGISTER_IMPL("batch_decode_paged_attention", cpu, decode_cpu);

}  // namespace
}  // namespace fk::ops::attn
