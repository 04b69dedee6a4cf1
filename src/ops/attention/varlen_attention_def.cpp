// varlen_attention: definition (workloads, case, cost, capture) and the CPU reference, which
// is also the CPU implementation: per sequence, head and query, the visible keys' logits in
// double, softmax by its maximum, the weighted sum of v, rounded once to out's dtype.
// Workload fields: seq_lens (per-sequence query lengths), seq_lens_k (key lengths; default
// seq_lens: self-attention), seq_used_k (keys each sequence uses: the seqused_k argument;
// default none), heads, kv_heads (default heads), head_dim, causal (default
// false), dtype (bf16), sm_scale (default 1 / sqrt(head_dim)).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "fk/element.h"
#include "fk/runtime.h"
#include "ops/attention/varlen_attention_validate.h"
#include "ops/common/case_builder.h"

namespace fk::ops {
namespace {

using A = VarlenAttentionArgs;

std::vector<int32_t> host_offsets(const TensorView& cu) {
  std::vector<int32_t> c(static_cast<size_t>(cu.shape[0]));
  rt::memcpy_sync(c.data(), Device::cpu(), cu.data, cu.device, c.size() * sizeof(int32_t));
  return c;
}

// The last key query i (of Lq) may see: every key, or bottom-right causal.
int64_t last_visible_key(int64_t i, int64_t lq, int64_t lk, bool causal) {
  return causal ? std::min(lk - 1, i + lk - lq) : lk - 1;
}

// The keys sequence b uses: its key tokens, or the first seqused_k[b] of them.
int64_t used_keys(const int32_t* ck, const int32_t* used, int64_t b) {
  const int64_t lk = ck[b + 1] - ck[b];
  return used != nullptr ? std::min<int64_t>(lk, used[b]) : lk;
}

void varlen_attention_reference(const A& a) {
  const auto* cq = static_cast<const int32_t*>(a.cu_seqlens_q.data);
  const auto* ck = static_cast<const int32_t*>(a.cu_seqlens_k.data);
  const auto* used = static_cast<const int32_t*>(a.seqused_k.data);
  const int64_t batch = a.cu_seqlens_q.shape[0] - 1, hq = a.q.shape[1], d = a.q.shape[2];
  const int64_t group = hq / a.k.shape[1];
  std::vector<double> logits, acc(static_cast<size_t>(d));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t q0 = cq[b], lq = cq[b + 1] - cq[b], k0 = ck[b], lk = used_keys(ck, used, b);
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t hk = h / group;
      for (int64_t i = 0; i < lq; ++i) {
        const int64_t last = last_visible_key(i, lq, lk, a.causal != 0);
        std::fill(acc.begin(), acc.end(), 0.0);
        double denom = 0;
        if (last >= 0) {
          logits.assign(static_cast<size_t>(last + 1), 0.0);
          double m = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j <= last; ++j) {
            double s = 0;
            for (int64_t x = 0; x < d; ++x) s += get(a.q, q0 + i, h, x) * get(a.k, k0 + j, hk, x);
            logits[static_cast<size_t>(j)] = s * static_cast<double>(a.sm_scale);
            m = std::max(m, logits[static_cast<size_t>(j)]);
          }
          for (int64_t j = 0; j <= last; ++j) {
            const double p = std::exp(logits[static_cast<size_t>(j)] - m);
            denom += p;
            for (int64_t x = 0; x < d; ++x) acc[static_cast<size_t>(x)] += p * get(a.v, k0 + j, hk, x);
          }
        }
        // No visible key: zeros (FlashAttention's output for a fully masked row).
        for (int64_t x = 0; x < d; ++x) set(a.out, denom > 0 ? acc[static_cast<size_t>(x)] / denom : 0.0, q0 + i, h, x);
      }
    }
  }
}

fk_status varlen_attention_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_varlen_attention(a, DeviceType::cpu);
    varlen_attention_reference(a);
  });
}

std::vector<int64_t> lengths_of(const std::vector<int32_t>& cu) {
  std::vector<int64_t> lens;
  for (size_t b = 0; b + 1 < cu.size(); ++b) lens.push_back(cu[b + 1] - cu[b]);
  return lens;
}

// The workload of a captured call (the sequence offsets copied to the host: capture
// synchronises around every call anyway).
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  Json w{{"seq_lens", lengths_of(host_offsets(a.cu_seqlens_q))},
         {"heads", a.q.shape[1]},
         {"kv_heads", a.k.shape[1]},
         {"head_dim", a.q.shape[2]},
         {"dtype", std::string(dtype_name(a.q.dtype))}};
  const auto lens_k = lengths_of(host_offsets(a.cu_seqlens_k));
  if (lens_k != w["seq_lens"].get<std::vector<int64_t>>()) w["seq_lens_k"] = lens_k;
  if (a.seqused_k.data != nullptr) {
    std::vector<int32_t> used(static_cast<size_t>(a.seqused_k.shape[0]));
    rt::memcpy_sync(used.data(), Device::cpu(), a.seqused_k.data, a.seqused_k.device, used.size() * sizeof(int32_t));
    w["seq_used_k"] = used;
  }
  if (a.causal) w["causal"] = true;
  if (std::abs(a.sm_scale - 1.0 / std::sqrt(static_cast<double>(a.q.shape[2]))) > 1e-6 * a.sm_scale)
    w["sm_scale"] = a.sm_scale;
  return w;
}

Tensor offsets_tensor(const std::vector<int64_t>& lens, const char* field) {
  Tensor t = Tensor::empty({static_cast<int64_t>(lens.size()) + 1}, DType::i32);
  int64_t total = 0;
  t.data_as<int32_t>()[0] = 0;
  for (size_t b = 0; b < lens.size(); ++b) {
    FK_CHECK(lens[b] >= 0, A::kName, " workload: ", field, "[", b, "] is negative (", lens[b], ")");
    total += lens[b];
    FK_CHECK(total <= std::numeric_limits<int32_t>::max(), A::kName, " workload: ", field, " sums past int32");
    t.data_as<int32_t>()[b + 1] = static_cast<int32_t>(total);
  }
  return t;
}

int32_t max_of(const std::vector<int64_t>& lens) {
  int64_t m = 0;
  for (int64_t l : lens) m = std::max(m, l);
  return static_cast<int32_t>(m);
}

int64_t sum_of(const std::vector<int64_t>& lens) {
  int64_t s = 0;
  for (int64_t l : lens) s += l;
  return s;
}

// Query-key pairs the op computes (causal: only the visible ones).
double visible_pairs(const A& a) {
  std::vector<int32_t> cq = host_offsets(a.cu_seqlens_q), ck = host_offsets(a.cu_seqlens_k), used;
  if (a.seqused_k.data != nullptr) {
    used.resize(static_cast<size_t>(a.seqused_k.shape[0]));
    rt::memcpy_sync(used.data(), Device::cpu(), a.seqused_k.data, a.seqused_k.device, used.size() * sizeof(int32_t));
  }
  double pairs = 0;
  for (size_t b = 0; b + 1 < cq.size(); ++b) {
    const int64_t lq = cq[b + 1] - cq[b], lk = used_keys(ck.data(), used.empty() ? nullptr : used.data(),
                                                         static_cast<int64_t>(b));
    for (int64_t i = 0; i < lq; ++i) pairs += static_cast<double>(last_visible_key(i, lq, lk, a.causal != 0) + 1);
  }
  return pairs;
}

Json wl(std::vector<int64_t> lens, int64_t heads, int64_t kv_heads, int64_t head_dim, const char* dtype = "bf16") {
  return Json{{"seq_lens", std::move(lens)}, {"heads", heads}, {"kv_heads", kv_heads}, {"head_dim", head_dim},
              {"dtype", dtype}};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "attention";
  d.level = "L1";
  d.summary = "packed variable-length sequences attend to themselves without a KV cache (bidirectional or causal, GQA)";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out)},
                   {"q", ArgRole::in, offsetof(A, q)},
                   {"k", ArgRole::in, offsetof(A, k)},
                   {"v", ArgRole::in, offsetof(A, v)},
                   {"cu_seqlens_q", ArgRole::in, offsetof(A, cu_seqlens_q)},
                   {"cu_seqlens_k", ArgRole::in, offsetof(A, cu_seqlens_k)},
                   {"seqused_k", ArgRole::in, offsetof(A, seqused_k)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const std::vector<int64_t> lens_q = wl_int_list(w, "seq_lens");
    const std::vector<int64_t> lens_k = w.contains("seq_lens_k") ? wl_int_list(w, "seq_lens_k") : lens_q;
    FK_CHECK(lens_k.size() == lens_q.size(), A::kName, " workload: seq_lens_k must have one length per sequence of ",
             "seq_lens, got ", w.dump());
    const int64_t heads = wl_int(w, "heads"), kv_heads = wl_int(w, "kv_heads", heads), dim = wl_int(w, "head_dim");
    FK_CHECK(heads > 0 && kv_heads > 0 && dim > 0, A::kName, " workload needs positive heads, kv_heads, head_dim: ",
             w.dump());
    const DType dt = wl_dtype(w);
    OpCase c = begin_case<A>(w, layout.size());
    const int64_t tq = sum_of(lens_q), tk = sum_of(lens_k);
    c.tensors[0] = Tensor::empty({tq, heads, dim}, dt);
    c.tensors[1] = random_tensor({tq, heads, dim}, dt, seed, 1, -2.f, 2.f);
    c.tensors[2] = random_tensor({tk, kv_heads, dim}, dt, seed, 2, -2.f, 2.f);
    c.tensors[3] = random_tensor({tk, kv_heads, dim}, dt, seed, 3, -1.f, 1.f);
    c.tensors[4] = offsets_tensor(lens_q, "seq_lens");
    c.tensors[5] = offsets_tensor(lens_k, "seq_lens_k");
    if (w.contains("seq_used_k")) {
      const std::vector<int64_t> used = wl_int_list(w, "seq_used_k");
      FK_CHECK(used.size() == lens_k.size(), A::kName, " workload: seq_used_k must have one count per sequence, got ",
               w.dump());
      c.tensors[6] = Tensor::empty({static_cast<int64_t>(used.size())}, DType::i32);
      for (size_t b = 0; b < used.size(); ++b) c.tensors[6].data_as<int32_t>()[b] = static_cast<int32_t>(used[b]);
    }
    A& a = c.as<A>();
    a.max_seqlen_q = max_of(lens_q);
    a.max_seqlen_k = max_of(lens_k);
    a.sm_scale = static_cast<float>(wl_float(w, "sm_scale", 1.0 / std::sqrt(static_cast<double>(dim))));
    a.causal = wl_bool(w, "causal", false) ? 1 : 0;
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double pairs = visible_pairs(a), heads = static_cast<double>(a.q.shape[1]);
    const double dim = static_cast<double>(a.q.shape[2]);
    // q.k and p.v: two multiply-adds per pair, head and dimension.
    return OpCost{static_cast<double>(a.q.nbytes() + a.k.nbytes() + a.v.nbytes() + a.out.nbytes()),
                  4.0 * pairs * heads * dim, a.q.dtype};
  };
  // Edge shapes: one token; lengths on both sides of the CUDA kernel's 64-row tiles; an
  // empty sequence; many short sequences; GQA; head dims 64, 72, 80, 88, 96, 128, 256; causal
  // self-attention and bottom-right causal with fewer or more queries than keys (queries
  // that see no key); f16; no tokens at all.
  d.test_workloads = {
      wl({1}, 2, 1, 64),
      wl({1, 63, 64, 65, 130}, 4, 2, 64),
      wl({3, 0, 5}, 2, 2, 128),
      wl({2, 1, 3, 7, 5, 1, 4, 6, 2, 9, 3, 1, 8, 2, 5, 3, 7, 1, 1, 4, 6, 2, 3, 5, 2, 1, 9, 4, 3, 2, 6, 1, 2, 3, 7, 5,
          1, 2, 4, 3},
         2, 1, 64),
      wl({17, 80}, 2, 2, 80),
      wl({37, 64, 90}, 2, 2, 72),
      wl({33, 66}, 3, 1, 96, "f16"),
      wl({40}, 2, 2, 88),
      wl({70}, 2, 1, 128),
      wl({40, 65}, 2, 2, 256),
      wl({0}, 2, 2, 64),
  };
  Json causal = wl({5, 70, 128}, 4, 1, 128);
  causal["causal"] = true;
  d.test_workloads.push_back(causal);
  Json cross = wl({3, 70, 8}, 2, 1, 64);
  cross["seq_lens_k"] = {10, 64, 3};
  cross["causal"] = true;
  d.test_workloads.push_back(cross);
  Json cross_full = wl({3, 70}, 2, 2, 64, "f16");
  cross_full["seq_lens_k"] = {130, 1};
  d.test_workloads.push_back(cross_full);
  // ColBERT's queries: 32 rows each, keys only the real tokens (the [MASK] padding queries
  // but is not attended to); a sequence that uses no key; causal with used keys.
  Json padded = wl({32, 32, 32, 70}, 2, 2, 64);
  padded["seq_used_k"] = {9, 32, 1, 66};
  d.test_workloads.push_back(padded);
  Json padded_causal = wl({5, 40}, 2, 1, 128, "f16");
  padded_causal["seq_used_k"] = {0, 33};
  padded_causal["causal"] = true;
  d.test_workloads.push_back(padded_causal);
  Json scaled = wl({20, 9}, 2, 2, 64);
  scaled["sm_scale"] = 0.5;  // sharp softmax: a few keys dominate
  d.test_workloads.push_back(scaled);
  // BGE-M3 (XLM-R large: 16 heads of 64, fp16): one 512-token passage, a batch of eight,
  // one 8k document and the mixed 512..8192 documents of its throughput benchmark; a
  // head dim 128 encoder for the kernel's other tile width; Qwen3-VL's vision tower on a
  // 1024 x 1024 image (4096 patches, 16 heads of 72).
  d.bench_workloads = {wl({512}, 16, 16, 64, "f16"),
                       wl({512, 512, 512, 512, 512, 512, 512, 512}, 16, 16, 64, "f16"),
                       wl({8192}, 16, 16, 64, "f16"),
                       wl({512, 1024, 2048, 4096, 8192, 777, 3000}, 16, 16, 64, "f16"),
                       wl({2048, 2048, 2048, 2048}, 16, 16, 128, "bf16"),
                       wl({4096}, 16, 16, 72, "bf16")};
  d.workload_from_call = workload_from_call;
  d.architectures = {"xlm_roberta", "qwen3_vl"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("varlen_attention", cpu, varlen_attention_cpu);
FK_REGISTER_VARIANT(A::kName, "no_sm90_ragged",
                    "head dims 72-128 on the 64-row mma.sync kernel instead of FlashInfer's Hopper ragged "
                    "prefill kernel (which copies K and V head-major, pads heads to 128 and reads the offsets "
                    "to the host)");

}  // namespace
}  // namespace fk::ops
