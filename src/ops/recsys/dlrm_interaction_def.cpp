// dlrm_interaction: definition (workloads, case, cost, tolerance, capture) and the CPU
// reference, which is also the CPU implementation: per sample, the dense row copied, then the
// dot products of distinct pairs of its F + 1 vectors in double, lower triangle row-major.
//
// Workload fields: batch (B), features (F, 26), dim (D, 128), dtype (bf16). dense is [B, D],
// sparse [B, F, D], out [B, D + (F + 1) F / 2].
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "fk/element.h"
#include "ops/common/case_builder.h"
#include "ops/recsys/dlrm_interaction_validate.h"

namespace fk::ops {
namespace {

using A = DlrmInteractionArgs;

void dlrm_interaction_reference(const A& a) {
  const int64_t batch = a.dense.shape[0], dim = a.dense.shape[1], features = a.sparse.shape[1];
  std::vector<double> x(static_cast<size_t>((features + 1) * dim));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t k = 0; k < dim; ++k) {
      x[static_cast<size_t>(k)] = get(a.dense, b, k);
      set(a.out, x[static_cast<size_t>(k)], b, k);  // exact: the value as stored
    }
    for (int64_t f = 0; f < features; ++f)
      for (int64_t k = 0; k < dim; ++k) x[static_cast<size_t>((f + 1) * dim + k)] = get(a.sparse, b, f, k);
    int64_t at = dim;
    for (int64_t i = 1; i <= features; ++i)
      for (int64_t j = 0; j < i; ++j) {
        const double* xi = x.data() + i * dim;
        const double* xj = x.data() + j * dim;
        double dot = 0;
        for (int64_t k = 0; k < dim; ++k) dot += xi[k] * xj[k];
        set(a.out, dot, b, at++);
      }
  }
}

fk_status dlrm_interaction_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_dlrm_interaction(a, DeviceType::cpu);
    dlrm_interaction_reference(a);
  });
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  return Json{{"batch", a.dense.shape[0]},
              {"features", a.sparse.shape[1]},
              {"dim", a.dense.shape[1]},
              {"dtype", std::string(dtype_name(a.dense.dtype))}};
}

// Against the f64 oracle. A dot product of D terms accumulated in fp32 carries an error
// that random-walks to about eps * sqrt(D) * typical, typical = sqrt(D) * rms(x)^2 the size
// of a dot product (4x for the tail, as linear's tolerance); products that cancel to near
// zero get no help from rtol, so it goes into atol on top of the dtype's default (it only
// matters for f32 outputs). The inputs are uniform in [-1, 1): rms 1 / sqrt(3).
Tolerance dlrm_interaction_tolerance(const OpCase& c, DType out_dtype) {
  Tolerance tol = default_tolerance(out_dtype);
  const double dim = static_cast<double>(c.as<A>().dense.shape[1]);
  const double typical = std::sqrt(dim) / 3.0;
  tol.atol += 4 * std::ldexp(1.0, -24) * typical * (std::sqrt(dim) + 4);
  return tol;
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "recsys";
  d.level = "L2";
  d.summary =
      "DLRM's dot interaction: out[b] = [dense[b], x_i . x_j for 0 <= j < i <= F] over the F + 1 vectors "
      "(dense, then the pooled embeddings), lower triangle row-major (a batched Gram matrix and its gather)";
  d.args_size = sizeof(A);
  // dense and sparse are usually slots of one [B, F + 1, D] buffer (batch stride (F + 1) D);
  // out may be a wider buffer (the top MLP's input, its rows padded to 16 bytes).
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out), RowStride::any},
                   {"dense", ArgRole::in, offsetof(A, dense), RowStride::any},
                   {"sparse", ArgRole::in, offsetof(A, sparse), RowStride::any}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const int64_t batch = wl_int(w, "batch"), features = wl_int(w, "features", 26), dim = wl_int(w, "dim", 128);
    const DType dt = wl_dtype(w);
    FK_CHECK(batch >= 0 && features >= 0 && dim >= 1, A::kName,
             " workload needs batch >= 0, features >= 0 and dim >= 1, got ", w.dump());
    FK_CHECK(dt == DType::f32 || dt == DType::f16 || dt == DType::bf16, A::kName,
             " workload dtype must be f32, f16 or bf16, got ", w.dump());
    OpCase c = begin_case<A>(w, layout.size());
    c.tensors[0] = Tensor::empty({batch, dlrm_interaction_width(dim, features)}, dt);
    c.tensors[1] = random_tensor({batch, dim}, dt, seed, 1);
    c.tensors[2] = random_tensor({batch, features, dim}, dt, seed, 2);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    // Every input read once, out written once; one multiply-add per pair and element.
    const double features = static_cast<double>(a.sparse.shape[1]);
    const double pairs = (features + 1) * features / 2 * static_cast<double>(a.dense.shape[0]);
    return OpCost{static_cast<double>(a.dense.nbytes() + a.sparse.nbytes() + a.out.nbytes()),
                  2.0 * pairs * static_cast<double>(a.dense.shape[1]), DType::f32};
  };
  d.tolerance = [](const OpCase& c, const TensorArg&, DType dt) { return dlrm_interaction_tolerance(c, dt); };
  using J = Json;
  // Edge shapes: MLPerf's 27 vectors of 128 on a few samples (and on more samples than one
  // CUDA block takes); few vectors in f32; no sparse features (the dense copy alone); one
  // pair with an odd width; D = 1; D past one staged chunk with a ragged end; 64 and 96
  // vectors (several passes over the pairs; the CUDA baseline's limit); no samples.
  d.test_workloads = {
      J{{"batch", 3}, {"features", 26}, {"dim", 128}},
      J{{"batch", 17}, {"features", 26}, {"dim", 128}, {"dtype", "f16"}},
      J{{"batch", 5}, {"features", 3}, {"dim", 16}, {"dtype", "f32"}},
      J{{"batch", 2}, {"features", 0}, {"dim", 8}},
      J{{"batch", 4}, {"features", 1}, {"dim", 33}, {"dtype", "f16"}},
      J{{"batch", 3}, {"features", 26}, {"dim", 1}, {"dtype", "f32"}},
      J{{"batch", 9}, {"features", 7}, {"dim", 200}},
      J{{"batch", 2}, {"features", 63}, {"dim", 64}},
      J{{"batch", 1}, {"features", 95}, {"dim", 40}, {"dtype", "f32"}},
      J{{"batch", 0}, {"features", 26}, {"dim", 128}},
  };
  // DLRM at MLPerf's shapes (26 tables, D = 128): batches of 16384, 2048 and 1 samples in
  // bf16, and the f16 engine dtype at the largest batch.
  d.bench_workloads = {
      J{{"batch", 16384}, {"features", 26}, {"dim", 128}},
      J{{"batch", 2048}, {"features", 26}, {"dim", 128}},
      J{{"batch", 1}, {"features", 26}, {"dim", 128}},
      J{{"batch", 16384}, {"features", 26}, {"dim", 128}, {"dtype", "f16"}},
  };
  d.workload_from_call = workload_from_call;
  d.architectures = {"dlrm"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("dlrm_interaction", cpu, dlrm_interaction_cpu);

}  // namespace
}  // namespace fk::ops
