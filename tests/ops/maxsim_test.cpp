// maxsim beyond the generic oracle test (which runs the op's test workloads, and their
// row-strided views): hand-computed scores, an independent implementation written here
// (the full similarity matrix of each query and document, then row maxima and their sum) on
// random and edge shapes (empty documents and queries, one-row documents, D = 8 and widths
// the CUDA baseline does not take, lengths that are no multiple of any tile) with the op's
// f64 output and its own f32 one, packing (a batch equals its pairs scored alone), row slices
// of a wider embedding store, the definition's workloads, and errors that name the bad field
// or metadata entry.
#include "fk/ops/maxsim.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fk/element.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "ops/packed_lengths.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::MaxSimArgs;
using test::expect_invalid;
using test::expect_ok;
using test::longest;
using test::offsets;
using test::total;


MaxSimArgs args(const TensorView& scores, const TensorView& query, const TensorView& doc, const Tensor& cu_q,
                const Tensor& cu_d, int32_t max_q, int32_t max_d) {
  return MaxSimArgs{scores, query, doc, cu_q, cu_d, max_q, max_d};
}

// The scores written independently of the op: for each pair the explicit Lq x Ld matrix of
// dot products, each row's maximum (0 for a document without rows), summed.
std::vector<double> scores_by_matrix(const TensorView& q, const TensorView& d, const std::vector<int32_t>& lens_q,
                                     const std::vector<int32_t>& lens_d) {
  const int64_t dim = q.shape[1];
  std::vector<double> out;
  int64_t q0 = 0;
  for (int32_t lq : lens_q) {
    int64_t d0 = 0;
    for (int32_t ld : lens_d) {
      std::vector<double> sim(static_cast<size_t>(lq) * static_cast<size_t>(ld));
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t j = 0; j < ld; ++j) {
          double dot = 0;
          for (int64_t k = 0; k < dim; ++k) dot += get(q, q0 + i, k) * get(d, d0 + j, k);
          sim[static_cast<size_t>(i * ld + j)] = dot;
        }
      double score = 0;
      for (int64_t i = 0; i < lq && ld > 0; ++i)
        score += *std::max_element(sim.begin() + i * ld, sim.begin() + (i + 1) * ld);
      out.push_back(score);
      d0 += ld;
    }
    q0 += lq;
  }
  return out;
}

TEST(MaxSim, HandComputedScores) {
  // Query 0: rows e0 and e1; query 1: no rows. Document 0: rows 2 e0, e0 + 3 e1, -e0 - e1;
  // document 1: no rows. Query 0's rows match document 0 best at 2 (row 0) and 3 (row 1).
  Tensor q = Tensor::zeros({2, 8}, DType::f32), d = Tensor::zeros({3, 8}, DType::f32);
  set(q.view(), 1.0, 0, 0), set(q.view(), 1.0, 1, 1);
  set(d.view(), 2.0, 0, 0);
  set(d.view(), 1.0, 1, 0), set(d.view(), 3.0, 1, 1);
  set(d.view(), -1.0, 2, 0), set(d.view(), -1.0, 2, 1);
  Tensor scores = Tensor::empty({2, 2}, DType::f32);
  expect_ok(DeviceType::cpu, args(scores, q, d, offsets({2, 0}), offsets({3, 0}), 2, 3));
  const float* s = scores.data_as<float>();
  EXPECT_EQ(s[0], 5.f);  // 2 + 3
  EXPECT_EQ(s[1], 0.f);  // a document without rows
  EXPECT_EQ(s[2], 0.f);  // a query without rows
  EXPECT_EQ(s[3], 0.f);
  // Negative best matches add up too: against -e0 - e1 alone, each row's best is -1.
  Tensor last = Tensor::empty({1, 1}, DType::f64);
  TensorView d_last = d.view();
  d_last.data = d_last.element_ptr(2 * 8), d_last.shape[0] = 1;
  expect_ok(DeviceType::cpu, args(last, q, d_last, offsets({2}), offsets({1}), 2, 1));
  EXPECT_EQ(last.data_as<double>()[0], -2.0);
}

struct Shape2 {
  std::vector<int32_t> lens_q, lens_d;
  int64_t dim;
};

TEST(MaxSim, MatchesTheSimilarityMatrixOnRandomAndEdgeShapes) {
  const Shape2 shapes[] = {
      {{32}, {60, 180, 1, 17}, 128},        // ColBERT's query; a one-row document
      {{5, 0, 40, 17}, {3, 0, 9, 64}, 64},  // an empty query and an empty document
      {{1}, {1}, 8},
      {{0, 0}, {4, 2}, 8},          // only empty queries
      {{3, 7}, {0, 0, 0}, 16},      // only empty documents
      {{33, 15}, {31, 1, 45}, 40},  // lengths on both sides of 16 and 32
      {{2, 3}, {5, 6}, 12},         // D not a multiple of 8 (CPU only)
      {{4}, {9, 3}, 300},           // D past the CUDA baseline's 256
      {{}, {3}, 8},                 // no queries
      {{3}, {}, 8},                 // no documents
  };
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (const Shape2& s : shapes) {
      const std::string what = std::string(dtype_name(dt)) + " queries " + ::testing::PrintToString(s.lens_q) +
                               " documents " + ::testing::PrintToString(s.lens_d) + " D " + std::to_string(s.dim);
      SCOPED_TRACE(what);
      const uint64_t seed = test::seed_for("maxsim_matrix " + what);
      const Tensor q = ops::random_tensor({total(s.lens_q), s.dim}, dt, seed, 1);
      const Tensor d = ops::random_tensor({total(s.lens_d), s.dim}, dt, seed, 2);
      const Shape shape = {static_cast<int64_t>(s.lens_q.size()), static_cast<int64_t>(s.lens_d.size())};
      const std::vector<double> want = scores_by_matrix(q, d, s.lens_q, s.lens_d);
      // The oracle's path (f64 scores) and the CPU implementation's (f32 scores).
      Tensor s64 = Tensor::empty(shape, DType::f64), s32 = Tensor::empty(shape, DType::f32);
      for (Tensor* out : {&s64, &s32}) {
        expect_ok(DeviceType::cpu,
                  args(*out, q, d, offsets(s.lens_q), offsets(s.lens_d), longest(s.lens_q), longest(s.lens_d)));
        const bool f64 = out->dtype() == DType::f64;
        for (size_t i = 0; i < want.size(); ++i) {
          const double got =
              get(out->view(), static_cast<int64_t>(i / s.lens_d.size()), static_cast<int64_t>(i % s.lens_d.size()));
          // f64: the same sums in another order; f32: one rounding of the double.
          const double tol = f64 ? 1e-9 * (1 + std::fabs(want[i])) : 1e-6 * (1 + std::fabs(want[i]));
          EXPECT_NEAR(got, want[i], tol) << "score " << i << (f64 ? " (f64)" : " (f32)");
        }
      }
    }
}

TEST(MaxSim, BatchEqualsEachPairAlone) {
  const std::vector<int32_t> lens_q = {7, 0, 32, 3}, lens_d = {12, 1, 0, 40, 5};
  const int64_t dim = 24;
  const uint64_t seed = test::seed_for("maxsim_pairs");
  const Tensor q = ops::random_tensor({total(lens_q), dim}, DType::bf16, seed, 1);
  const Tensor d = ops::random_tensor({total(lens_d), dim}, DType::bf16, seed, 2);
  Tensor batch = Tensor::empty({4, 5}, DType::f64);
  expect_ok(DeviceType::cpu, args(batch, q, d, offsets(lens_q), offsets(lens_d), 32, 40));
  int64_t q0 = 0;
  for (size_t a = 0; a < lens_q.size(); ++a) {
    int64_t d0 = 0;
    for (size_t b = 0; b < lens_d.size(); ++b) {
      TensorView qa = q.view(), db = d.view();
      qa.data = qa.element_ptr(q0 * dim), qa.shape[0] = lens_q[a];
      db.data = db.element_ptr(d0 * dim), db.shape[0] = lens_d[b];
      Tensor one = Tensor::empty({1, 1}, DType::f64);
      expect_ok(DeviceType::cpu, args(one, qa, db, offsets({lens_q[a]}), offsets({lens_d[b]}), lens_q[a], lens_d[b]));
      EXPECT_EQ(one.data_as<double>()[0], get(batch.view(), static_cast<int64_t>(a), static_cast<int64_t>(b)))
          << "query " << a << ", document " << b;
      d0 += lens_d[b];
    }
    q0 += lens_q[a];
  }
}

TEST(MaxSim, RowSlicesOfAWiderStoreMatchContiguousRows) {
  // Embeddings stored as [tokens, 3D] (e.g. several heads' outputs side by side): the middle
  // D columns as views with row stride 3D, and the same values copied contiguous.
  const std::vector<int32_t> lens_q = {5, 9}, lens_d = {11, 2, 7};
  const int64_t dim = 16;
  const uint64_t seed = test::seed_for("maxsim_slices");
  const Tensor wide_q = ops::random_tensor({total(lens_q), 3 * dim}, DType::f16, seed, 1);
  const Tensor wide_d = ops::random_tensor({total(lens_d), 3 * dim}, DType::f16, seed, 2);
  auto middle = [&](const Tensor& wide) {
    TensorView v = wide.view();
    v.data = v.element_ptr(dim), v.shape[1] = dim;
    return v;
  };
  const TensorView q = middle(wide_q), d = middle(wide_d);
  const Tensor q_packed = test::contiguous_copy(q), d_packed = test::contiguous_copy(d);
  Tensor strided = Tensor::empty({2, 3}, DType::f64), packed = Tensor::empty({2, 3}, DType::f64);
  expect_ok(DeviceType::cpu, args(strided, q, d, offsets(lens_q), offsets(lens_d), 9, 11));
  expect_ok(DeviceType::cpu, args(packed, q_packed, d_packed, offsets(lens_q), offsets(lens_d), 9, 11));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(strided.data_as<double>()[i], packed.data_as<double>()[i]) << i;
}

TEST(MaxSim, DefinitionWorkloadsCostAndCapture) {
  const OpDef& def = OpRegistry::global().def(MaxSimArgs::kName);
  EXPECT_EQ(def.family, "retrieval");
  EXPECT_EQ(def.level, "L2");
  // ColBERTv2: 128-wide fp16 embeddings, 32-token queries, documents of up to 180 tokens,
  // re-ranking 1000 passages for one query and for a batch of 32.
  bool rerank = false, batch = false;
  for (const Json& w : def.bench_workloads) {
    const bool colbert =
        ops::wl_int(w, "dim") == 128 && ops::wl_int(w, "query_len") == 32 && ops::wl_int(w, "doc_len") == 180;
    rerank |= colbert && ops::wl_int(w, "queries") == 1 && ops::wl_int(w, "docs") == 1000;
    batch |= colbert && ops::wl_int(w, "queries") == 32 && ops::wl_int(w, "docs") == 1000;
  }
  EXPECT_TRUE(rerank);
  EXPECT_TRUE(batch);

  // The compact form: ragged lengths in [doc_len_min, doc_len], the same for every seed.
  const Json w = {{"queries", 3},      {"query_len", 32}, {"docs", 50},    {"doc_len", 180},
                  {"doc_len_min", 60}, {"dim", 128},      {"dtype", "f16"}};
  const OpCase c = def.make_case(w, test::seed_for("maxsim_def"));
  const OpCase again = def.make_case(w, test::seed_for("maxsim_def") + 1);
  const auto& a = c.as<MaxSimArgs>();
  ASSERT_EQ(a.cu_seqlens_d.shape[0], 51);
  const auto* cd = static_cast<const int32_t*>(a.cu_seqlens_d.data);
  int32_t shortest = std::numeric_limits<int32_t>::max(), longest_d = 0;
  for (int b = 0; b < 50; ++b) {
    shortest = std::min(shortest, cd[b + 1] - cd[b]);
    longest_d = std::max(longest_d, cd[b + 1] - cd[b]);
    EXPECT_EQ(cd[b + 1], static_cast<const int32_t*>(again.as<MaxSimArgs>().cu_seqlens_d.data)[b + 1]) << b;
  }
  EXPECT_GE(shortest, 60);
  EXPECT_LE(longest_d, 180);
  EXPECT_LT(shortest, longest_d);  // ragged
  EXPECT_EQ(a.max_seqlen_q, 32);
  EXPECT_EQ(a.max_seqlen_d, longest_d);
  EXPECT_EQ(a.query.dtype, DType::f16);
  EXPECT_EQ(a.scores.dtype, DType::f32);
  EXPECT_EQ(a.scores.shape[0], 3);
  EXPECT_EQ(a.scores.shape[1], 50);

  // Cost: a D-long dot product per (query row, document row) pair.
  const double tq = 96, td = cd[50];
  EXPECT_EQ(def.cost(c).flops, 2.0 * 128 * tq * td);
  EXPECT_EQ(def.cost(c).bytes, (tq + td) * 128 * 2 + (4 + 51) * 4 + 3 * 50 * 4);
  // The tolerance widens the f32 default with the rows' accumulation errors.
  const Tolerance tol = def.tolerance(c, def.tensor_args[0], DType::f32);
  EXPECT_GT(tol.atol, default_tolerance(DType::f32).atol);
  EXPECT_LT(tol.atol, 1e-2);

  // A captured call gives back the same shapes (equal query lengths as a count and length).
  const Json captured = def.workload_from_call(c.args_ptr());
  EXPECT_EQ(captured.at("queries"), 3);
  EXPECT_EQ(captured.at("query_len"), 32);
  const OpCase rebuilt = def.make_case(captured, 7);
  const auto& r = rebuilt.as<MaxSimArgs>();
  for (int b = 0; b <= 50; ++b) EXPECT_EQ(static_cast<const int32_t*>(r.cu_seqlens_d.data)[b], cd[b]) << b;
  EXPECT_EQ(r.query.shape[0], 96);
  EXPECT_EQ(r.query.dtype, DType::f16);
  const Json ragged_q = def.workload_from_call(
      def.make_case(Json{{"query_lens", {3, 0, 5}}, {"doc_lens", {2}}, {"dim", 8}}, 1).args_ptr());
  EXPECT_EQ(ragged_q.at("query_lens"), Json({3, 0, 5}));

  // Workload errors name the field.
  auto fails_naming = [&](const Json& bad, const std::string& needle) {
    try {
      def.make_case(bad, 1);
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  fails_naming(Json{{"query_lens", {3}}, {"doc_lens", {2}}}, "dim");
  fails_naming(Json{{"query_lens", {3, -1}}, {"doc_lens", {2}}, {"dim", 8}}, "query_lens[1] is negative");
  fails_naming(Json{{"queries", 2}, {"query_len", 5}, {"query_len_min", 9}, {"doc_lens", {2}}, {"dim", 8}},
               "query_len_min");
  fails_naming(Json{{"query_lens", {3}}, {"doc_lens", {2}}, {"dim", 8}, {"max_seqlen_d", 1}}, "max_seqlen_d = 1");
}

TEST(MaxSimErrors, BadMetadataIsNamed) {
  const auto cpu = DeviceType::cpu;
  Tensor q = Tensor::zeros({6, 8}, DType::bf16), d = Tensor::zeros({5, 8}, DType::bf16);
  Tensor scores = Tensor::empty({2, 2}, DType::f32);
  const Tensor cu_q = offsets({2, 4}), cu_d = offsets({1, 4});
  expect_ok(cpu, args(scores, q, d, cu_q, cu_d, 4, 4));
  expect_invalid(cpu, args(scores, q, d, cu_q, cu_d, 3, 4),
                 "query 1 has 4 rows by cu_seqlens_q, more than max_seqlen_q = 3");
  expect_invalid(cpu, args(scores, q, d, cu_q, cu_d, 4, 2),
                 "document 1 has 4 rows by cu_seqlens_d, more than max_seqlen_d = 2");
  expect_invalid(cpu, args(scores, q, d, offsets({2, 3}), cu_d, 4, 4),
                 "cu_seqlens_q must end at the 6 packed query rows");
  expect_invalid(cpu, args(scores, q, d, cu_q, offsets({1, 5}), 4, 5),
                 "cu_seqlens_d must end at the 5 packed document rows, got 6");
  Tensor decreasing = offsets({2, 4});
  decreasing.data_as<int32_t>()[1] = 7;
  expect_invalid(cpu, args(scores, q, d, decreasing, cu_d, 7, 4),
                 "cu_seqlens_q must not decrease: entry 2 is 6 after 7");
  Tensor nonzero = offsets({1, 4});
  nonzero.data_as<int32_t>()[0] = 1;
  expect_invalid(cpu, args(scores, q, d, cu_q, nonzero, 4, 4), "cu_seqlens_d[0] must be 0, got 1");
  expect_invalid(cpu, args(scores, q, d, Tensor::zeros({3}, DType::i64), cu_d, 4, 4), "cu_seqlens_q must be i32");
  expect_invalid(cpu, args(scores, q, d, Tensor::zeros({3, 1}, DType::i32), cu_d, 4, 4),
                 "cu_seqlens_q must be i32[count + 1]");
  expect_invalid(cpu, args(scores, q, d, cu_q, cu_d, -1, 4), "max_seqlen_q and max_seqlen_d must not be negative");
}

TEST(MaxSimErrors, BadArgumentsAreNamed) {
  const auto cpu = DeviceType::cpu;
  const DType bf = DType::bf16;
  Tensor q = Tensor::zeros({6, 8}, bf), d = Tensor::zeros({5, 8}, bf);
  Tensor scores = Tensor::empty({2, 2}, DType::f32);
  const Tensor cu_q = offsets({2, 4}), cu_d = offsets({1, 4});
  expect_invalid(cpu,
                 args(scores, Tensor::zeros({6, 8}, DType::i32), Tensor::zeros({5, 8}, DType::i32), cu_q, cu_d, 4, 4),
                 "query must be one of f32/f16/bf16");
  expect_invalid(cpu, args(scores, q, Tensor::zeros({5, 8}, DType::f16), cu_q, cu_d, 4, 4), "doc must be bf16");
  expect_invalid(cpu, args(scores, q, Tensor::zeros({5, 16}, bf), cu_q, cu_d, 4, 4),
                 "doc must have query's embedding width 8");
  expect_invalid(cpu, args(scores, Tensor::zeros({6, 2, 4}, bf), d, cu_q, cu_d, 4, 4), "query must have rank 2");
  expect_invalid(cpu, args(Tensor::empty({2, 3}, DType::f32), q, d, cu_q, cu_d, 4, 4),
                 "scores must be [Bq, Bd] = [2, 2]");
  expect_invalid(cpu, args(Tensor::empty({2, 2}, bf), q, d, cu_q, cu_d, 4, 4), "scores must be f32");
  // Scores with padded rows: the op writes them packed.
  Tensor wide = Tensor::empty({2, 4}, DType::f32);
  TensorView padded = wide.view();
  padded.shape[1] = 2;
  expect_invalid(cpu, args(padded, q, d, cu_q, cu_d, 4, 4), "scores must be contiguous");
  // Columns not contiguous: every other element of a wider buffer.
  Tensor wide_q = Tensor::zeros({6, 16}, bf);
  TensorView every_other = wide_q.view();
  every_other.shape[1] = 8, every_other.strides[1] = 2;
  expect_invalid(cpu, args(scores, every_other, d, cu_q, cu_d, 4, 4), "query must have a contiguous last dimension");
  // Scores over the query's own bytes.
  Tensor buf = Tensor::zeros({6, 8}, DType::f32);
  TensorView over = buf.view();
  over.shape[0] = 2, over.shape[1] = 2, over.strides[0] = 2;
  expect_invalid(cpu, args(over, buf, Tensor::zeros({5, 8}, DType::f32), cu_q, cu_d, 4, 4),
                 "scores must not overlap query");
  // Tensors must live on the backend that runs.
  TensorView on_gpu = d.view();
  on_gpu.device = Device::cuda();
  expect_invalid(cpu, args(scores, q, on_gpu, cu_q, cu_d, 4, 4), "doc must be on cpu");
}

TEST(MaxSimErrors, CudaImplementationRejectsHostTensors) {
  if (!OpRegistry::global().baseline(MaxSimArgs::kName, DeviceType::cuda)) GTEST_SKIP() << "CPU-only build";
  Tensor q = Tensor::zeros({2, 8}, DType::bf16), scores = Tensor::empty({1, 1}, DType::f32);
  expect_invalid(DeviceType::cuda, args(scores, q, q, offsets({2}), offsets({2}), 2, 2), "query must be on cuda");
}

}  // namespace
}  // namespace fk
