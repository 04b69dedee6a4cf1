// maxsim: definition (workloads, case, cost, tolerance, capture) and the CPU reference, which
// is also the CPU implementation: per query and document, every query row's largest dot
// product with the document's rows in double, summed over the query's rows.
//
// Workload fields: dim (D), dtype (bf16), and the lengths of each side, either as a list
// (query_lens, doc_lens) or as a count and a length (queries + query_len, docs + doc_len),
// with query_len_min / doc_len_min making them ragged: lengths spread over [min, len] by a
// fixed integer hash of the index, so a workload is one shape whatever the seed. Optional
// max_seqlen_q / max_seqlen_d: looser bounds than the longest length (the default).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "fk/element.h"
#include "fk/runtime.h"
#include "ops/common/case_builder.h"
#include "ops/retrieval/maxsim_validate.h"

namespace fk::ops {
namespace {

using A = MaxSimArgs;

std::vector<int32_t> host_offsets(const TensorView& cu) {
  std::vector<int32_t> c(static_cast<size_t>(cu.shape[0]));
  rt::memcpy_sync(c.data(), Device::cpu(), cu.data, cu.device, c.size() * sizeof(int32_t));
  return c;
}

// Rows [first, first + count) of a [tokens, D] host view as doubles, row after row: the
// reference's inner loop then runs over plain memory.
void rows_as_double(const TensorView& v, int64_t first, int64_t count, std::vector<double>& out) {
  const int64_t dim = v.shape[1];
  out.resize(static_cast<size_t>(count * dim));
  for (int64_t r = 0; r < count; ++r)
    for (int64_t k = 0; k < dim; ++k) out[static_cast<size_t>(r * dim + k)] = get(v, first + r, k);
}

void maxsim_reference(const A& a) {
  const auto* cq = static_cast<const int32_t*>(a.cu_seqlens_q.data);
  const auto* cd = static_cast<const int32_t*>(a.cu_seqlens_d.data);
  const int64_t bq = a.cu_seqlens_q.shape[0] - 1, bd = a.cu_seqlens_d.shape[0] - 1, dim = a.query.shape[1];
  std::vector<double> q, d;
  rows_as_double(a.query, 0, a.query.shape[0], q);
  for (int64_t b = 0; b < bd; ++b) {
    const int64_t d0 = cd[b], ld = cd[b + 1] - cd[b];
    rows_as_double(a.doc, d0, ld, d);
    for (int64_t qa = 0; qa < bq; ++qa) {
      double score = 0;
      // A document without rows matches nothing: every query row adds 0.
      if (ld > 0) {
        for (int64_t i = cq[qa]; i < cq[qa + 1]; ++i) {
          const double* qi = q.data() + i * dim;
          double best = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < ld; ++j) {
            const double* dj = d.data() + j * dim;
            double dot = 0;
            for (int64_t k = 0; k < dim; ++k) dot += qi[k] * dj[k];
            best = std::max(best, dot);
          }
          score += best;
        }
      }
      set(a.scores, score, qa, b);
    }
  }
}

fk_status maxsim_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_maxsim(a, DeviceType::cpu);
    maxsim_reference(a);
  });
}

std::vector<int64_t> lengths_of(const std::vector<int32_t>& cu) {
  std::vector<int64_t> lens;
  for (size_t i = 0; i + 1 < cu.size(); ++i) lens.push_back(cu[i + 1] - cu[i]);
  return lens;
}

// The workload of a captured call (the offsets copied to the host: capture synchronises
// around every call anyway). Equal query lengths (ColBERT pads every query to one length)
// are written as a count and a length.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  const std::vector<int64_t> lens_q = lengths_of(host_offsets(a.cu_seqlens_q));
  const std::vector<int64_t> lens_d = lengths_of(host_offsets(a.cu_seqlens_d));
  Json w{{"doc_lens", lens_d}, {"dim", a.query.shape[1]}, {"dtype", std::string(dtype_name(a.query.dtype))}};
  const bool equal =
      !lens_q.empty() && std::all_of(lens_q.begin(), lens_q.end(), [&](int64_t l) { return l == lens_q.front(); });
  if (equal) {
    w["queries"] = static_cast<int64_t>(lens_q.size());
    w["query_len"] = lens_q.front();
  } else {
    w["query_lens"] = lens_q;
  }
  return w;
}

// A fixed hash of an index (splitmix64's finaliser): ragged lengths that do not depend on
// the case's seed.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// One side's lengths: the list field, or count + len (+ len_min) spread by mix().
std::vector<int64_t> side_lengths(const Json& w, const char* list, const char* count, const char* len,
                                  const char* len_min, uint64_t salt) {
  if (w.contains(list)) {
    std::vector<int64_t> lens = wl_int_list(w, list);
    for (size_t i = 0; i < lens.size(); ++i)
      FK_CHECK(lens[i] >= 0, A::kName, " workload: ", list, "[", i, "] is negative (", lens[i], ")");
    return lens;
  }
  const int64_t n = wl_int(w, count), hi = wl_int(w, len), lo = wl_int(w, len_min, hi);
  FK_CHECK(n >= 0 && lo >= 0 && lo <= hi, A::kName, " workload needs ", count, " >= 0 and 0 <= ", len_min, " <= ", len,
           ", got ", w.dump());
  std::vector<int64_t> lens(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    lens[static_cast<size_t>(i)] =
        lo + static_cast<int64_t>(mix(salt ^ static_cast<uint64_t>(i)) % static_cast<uint64_t>(hi - lo + 1));
  return lens;
}

Tensor offsets_tensor(const std::vector<int64_t>& lens, const char* side) {
  Tensor t = Tensor::empty({static_cast<int64_t>(lens.size()) + 1}, DType::i32);
  int64_t total = 0;
  t.data_as<int32_t>()[0] = 0;
  for (size_t i = 0; i < lens.size(); ++i) {
    total += lens[i];
    FK_CHECK(total <= std::numeric_limits<int32_t>::max(), A::kName, " workload: the ", side, " rows sum past int32");
    t.data_as<int32_t>()[i + 1] = static_cast<int32_t>(total);
  }
  return t;
}

int64_t max_of(const std::vector<int64_t>& lens) {
  int64_t m = 0;
  for (int64_t l : lens) m = std::max(m, l);
  return m;
}

int64_t sum_of(const std::vector<int64_t>& lens) {
  int64_t s = 0;
  for (int64_t l : lens) s += l;
  return s;
}

// A bound given by the workload (at least the longest length), or the longest length.
int32_t bound(const Json& w, const char* key, const std::vector<int64_t>& lens) {
  const int64_t longest = max_of(lens), b = wl_int(w, key, longest);
  FK_CHECK(b >= longest && b <= std::numeric_limits<int32_t>::max(), A::kName, " workload: ", key, " = ", b,
           " must hold the longest length ", longest);
  return static_cast<int32_t>(b);
}

double rms(const TensorView& v) {
  const int64_t rows = v.shape[0], cols = v.shape[1];
  if (rows * cols == 0) return 0;
  double sum_sq = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k) {
      const double x = get(v, r, k);
      sum_sq += x * x;
    }
  return std::sqrt(sum_sq / static_cast<double>(rows * cols));
}

// Against the f64 oracle. A score is a sum of up to max_seqlen_q row maxima, each one dot
// product of D terms. Each maximum carries its dot product's fp32 accumulation error, which
// random-walks to about eps * sqrt(D) * typical, with typical = sqrt(D) * rms(query) *
// rms(doc) the size of a dot product (linear's tolerance; 4x for the tail), plus the
// rounding of the running sum, eps * |maximum| with maxima a few typical sizes. The rows'
// errors add up (at worst all one way), and scores that cancel to near zero get no help
// from rtol, so this goes into atol on top of f32's default.
Tolerance maxsim_tolerance(const OpCase& c) {
  const A& a = c.as<A>();
  Tolerance tol = default_tolerance(DType::f32);
  const double dim = static_cast<double>(a.query.shape[1]), rows = static_cast<double>(a.max_seqlen_q);
  const double typical = std::sqrt(dim) * rms(a.query) * rms(a.doc);
  tol.atol += 4 * std::ldexp(1.0, -24) * rows * typical * (std::sqrt(dim) + 4);
  return tol;
}

Json wl(std::vector<int64_t> lens_q, std::vector<int64_t> lens_d, int64_t dim, const char* dtype = "bf16") {
  return Json{{"query_lens", std::move(lens_q)}, {"doc_lens", std::move(lens_d)}, {"dim", dim}, {"dtype", dtype}};
}

// ColBERTv2: 128-wide embeddings in fp16, every query padded to 32 tokens (query_maxlen),
// documents of at most 180 tokens (doc_maxlen) and most of them longer than 60.
Json colbert(int64_t queries, int64_t docs, int64_t doc_len_min = 60) {
  return Json{{"queries", queries},         {"query_len", 32}, {"docs", docs},  {"doc_len", 180},
              {"doc_len_min", doc_len_min}, {"dim", 128},      {"dtype", "f16"}};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "retrieval";
  d.level = "L2";
  d.summary =
      "ColBERT's late-interaction score of packed queries and documents: sum over query tokens of the max "
      "dot product with the document's tokens (GEMM, row max and sum in one)";
  d.args_size = sizeof(A);
  // query and doc may be row slices of a wider embedding store (rows 16-byte aligned, which
  // the CUDA baseline loads in 16-byte words).
  d.tensor_args = {{"scores", ArgRole::out, offsetof(A, scores)},
                   {"query", ArgRole::in, offsetof(A, query), RowStride::aligned16},
                   {"doc", ArgRole::in, offsetof(A, doc), RowStride::aligned16},
                   {"cu_seqlens_q", ArgRole::in, offsetof(A, cu_seqlens_q)},
                   {"cu_seqlens_d", ArgRole::in, offsetof(A, cu_seqlens_d)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const std::vector<int64_t> lens_q = side_lengths(w, "query_lens", "queries", "query_len", "query_len_min", 1);
    const std::vector<int64_t> lens_d = side_lengths(w, "doc_lens", "docs", "doc_len", "doc_len_min", 2);
    const int64_t dim = wl_int(w, "dim");
    FK_CHECK(dim > 0, A::kName, " workload needs a positive dim, got ", w.dump());
    const DType dt = wl_dtype(w);
    OpCase c = begin_case<A>(w, layout.size());
    const auto bq = static_cast<int64_t>(lens_q.size()), bd = static_cast<int64_t>(lens_d.size());
    c.tensors[0] = Tensor::empty({bq, bd}, DType::f32);
    c.tensors[1] = random_tensor({sum_of(lens_q), dim}, dt, seed, 1);
    c.tensors[2] = random_tensor({sum_of(lens_d), dim}, dt, seed, 2);
    c.tensors[3] = offsets_tensor(lens_q, "query");
    c.tensors[4] = offsets_tensor(lens_d, "document");
    A& a = c.as<A>();
    a.max_seqlen_q = bound(w, "max_seqlen_q", lens_q);
    a.max_seqlen_d = bound(w, "max_seqlen_d", lens_d);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    // Every (query row, document row) pair is one D-long dot product: 2 * D * Tq * Td.
    const double pairs = static_cast<double>(a.query.shape[0]) * static_cast<double>(a.doc.shape[0]);
    return OpCost{static_cast<double>(a.query.nbytes() + a.doc.nbytes() + a.cu_seqlens_q.nbytes() +
                                      a.cu_seqlens_d.nbytes() + a.scores.nbytes()),
                  2.0 * static_cast<double>(a.query.shape[1]) * pairs, a.query.dtype};
  };
  d.tolerance = [](const OpCase& c, const TensorArg&, DType) { return maxsim_tolerance(c); };
  // Edge shapes: ColBERT's 32-row query against a one-row document and lengths that are not
  // multiples of 8 or 16; an empty query and an empty document among others; queries across
  // 32-row boundaries; D = 8 with single rows; documents longer than the CUDA kernel keeps
  // on chip (192 rows at the widest D, 256; 384 at 128); only empty documents; only empty
  // queries; no queries; no documents; the f32 path at an odd multiple of 8; D not a
  // multiple of 16 or 32; many short documents (several to a CUDA block); bounds looser
  // than the lengths; a ragged workload in the compact form.
  d.test_workloads = {
      wl({32}, {60, 180, 1, 17}, 128, "f16"),
      wl({5, 0, 40, 17}, {3, 0, 9, 64, 8}, 64),
      wl({1}, {1}, 8),
      wl({33, 31, 16}, {200, 7, 450}, 256),
      wl({3, 70}, {0, 0}, 32, "f32"),
      wl({0, 0}, {5, 9}, 16, "f16"),
      wl({}, {4, 4}, 8),
      wl({4, 2}, {}, 8),
      wl({12, 7, 30}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, 24, "f32"),
      wl({9, 23}, {31, 1, 45}, 40, "f16"),
      wl({20}, {15, 33}, 136),
      wl({8, 8, 8, 3}, {2, 0, 5, 1, 7, 3, 9, 4, 6, 8, 1, 0, 2, 5, 3, 7, 4, 6, 2, 9,
                        1, 3, 8, 5, 2, 6, 4, 1, 7, 3, 5, 2, 8, 0, 6, 1, 4, 9, 3, 2},
         64),
      wl({32, 32, 32}, {700, 12}, 128, "f16"),
  };
  Json loose = wl({6, 11}, {13, 4, 30}, 96);
  loose["max_seqlen_q"] = 64;
  loose["max_seqlen_d"] = 500;
  d.test_workloads.push_back(loose);
  Json ragged = colbert(3, 40, 1);
  ragged["doc_len"] = 50;
  ragged["dtype"] = "bf16";
  d.test_workloads.push_back(ragged);
  // ColBERTv2 at its serving shapes: re-ranking one query's 1000 candidate passages, a batch
  // of 32 queries against the same 1000, 128 x 128, and a small ragged batch (queries cut
  // short, documents of any length up to doc_maxlen) in bf16.
  d.bench_workloads = {colbert(1, 1000), colbert(32, 1000), colbert(128, 128)};
  Json small = colbert(16, 64, 1);
  small["query_len_min"] = 8;
  small["dtype"] = "bf16";
  d.bench_workloads.push_back(small);
  d.workload_from_call = workload_from_call;
  d.architectures = {"bert"};  // ColBERTv2: BERT with ColBERT's projection, scored by MaxSim
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("maxsim", cpu, maxsim_cpu);

}  // namespace
}  // namespace fk::ops
