// dlrm_top: definition (workloads, case, cost, tolerance), validation, the composed baseline
// (its parts through the registry) and the CPU reference in double (the oracle, when the
// logits are f64), in the order of fk/ops/recsys.h.
#include <algorithm>
#include <cstddef>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/activation.h"
#include "fk/ops/linear.h"
#include "fk/ops/recsys.h"
#include "ops/common/case_builder.h"
#include "ops/common/layer_cost.h"
#include "ops/common/validate.h"
#include "ops/linear/linear_reference.h"
#include "ops/norm/norm_reference.h"
#include "ops/recsys/dlrm_top_composed.h"

namespace fk::ops {
namespace {

using A = DlrmTopArgs;
constexpr const char* kOp = A::kName;

int64_t padded8(int64_t n) { return (n + 7) / 8 * 8; }

struct Shape {
  int64_t batch, features, dim, z;
  std::vector<int64_t> widths;  // N_l
};

Shape validate(const A& a, DeviceType backend) {
  FK_CHECK(a.layers >= 1 && a.layers <= A::kMaxLayers, kOp, ": layers must be 1 to ", A::kMaxLayers, ", got ",
           a.layers);
  FK_CHECK(a.dense.rank == 2 && a.sparse.rank == 3, kOp, ": dense must be [B, D] and sparse [B, F, D], got ",
           describe(a.dense), " and ", describe(a.sparse));
  const DType dt = a.dense.dtype;
  FK_CHECK(dt == DType::f16 || dt == DType::bf16, kOp, ": dense must be f16 or bf16, got ", describe(a.dense));
  expect_dtype(kOp, "sparse", a.sparse, dt);
  Shape s{a.dense.shape[0], a.sparse.shape[1], a.dense.shape[1], 0, {}};
  FK_CHECK(a.sparse.shape[0] == s.batch && a.sparse.shape[2] == s.dim, kOp, ": sparse must be [", s.batch, ", F, ",
           s.dim, "], got ", describe(a.sparse));
  s.z = s.dim + (s.features + 1) * s.features / 2;
  int64_t in = s.z;
  for (int l = 0; l < a.layers; ++l) {
    const TensorView& w = a.weight[l];
    FK_CHECK(w.rank == 2 && w.shape[1] == padded8(in) && w.is_contiguous(), kOp, ": weight[", l,
             "] must be a contiguous [N, ", padded8(in), "] (its ", in, " inputs in rows padded to 8), got ",
             describe(w));
    expect_dtype(kOp, "weight", w, dt);
    expect_device(kOp, "weight", w, backend);
    const int64_t n = w.shape[0];
    FK_CHECK(n > 0 && a.bias[l].rank == 1 && a.bias[l].shape[0] == n && a.bias[l].is_contiguous(), kOp, ": bias[", l,
             "] must be a contiguous [", n, "], got ", describe(a.bias[l]));
    expect_dtype(kOp, "bias", a.bias[l], dt);
    s.widths.push_back(n);
    in = n;
  }
  const int64_t widest = *std::max_element(s.widths.begin(), s.widths.end());
  FK_CHECK(a.logits.rank == 2 && a.logits.shape[0] == s.batch && a.logits.shape[1] == s.widths.back(), kOp,
           ": logits must be [", s.batch, ", ", s.widths.back(), "], got ", describe(a.logits));
  expect_written_dtype(kOp, "logits", a.logits, dt, backend);
  for (const auto& [name, v, width] : {std::tuple<const char*, const TensorView*, int64_t>{"interaction", &a.interaction,
                                                                                           padded8(s.z)},
                                       {"pre", &a.pre, padded8(widest)},
                                       {"post", &a.post, padded8(widest)}}) {
    FK_CHECK(v->rank == 2 && v->shape[0] >= s.batch && v->shape[1] >= width && v->is_contiguous(), kOp, ": ", name,
             " must be a contiguous workspace of at least [", s.batch, ", ", width, "], got ", describe(*v));
    expect_dtype(kOp, name, *v, dt);
  }
  for (const TensorView* v : {&a.dense, &a.sparse, &a.interaction, &a.pre, &a.post}) expect_device(kOp, "input", *v, backend);
  return s;
}

// The first `cols` columns of the first `rows` rows of a row-major matrix.
TensorView block(const TensorView& m, int64_t rows, int64_t cols) {
  TensorView v = m;
  v.shape[0] = rows;
  v.shape[1] = cols;
  return v;
}

template <DeviceType B>
fk_status composed(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    const Shape s = validate(a, B);
    if (s.batch == 0) return;
    const TensorView none{};
    TensorView x = block(a.interaction, s.batch, s.z);
    call_op(DlrmInteractionArgs{x, a.dense, a.sparse}, B, stream);
    int64_t in = s.z;
    for (int l = 0; l < a.layers; ++l) {
      const int64_t n = s.widths[static_cast<size_t>(l)];
      const bool last = l + 1 == a.layers;
      // The linear reads x (post after the first layer) and writes pre (or the logits); the
      // relu reads pre and writes post: no call writes what it reads.
      const TensorView out = last ? a.logits : block(a.pre, s.batch, n);
      call_op(LinearArgs{out, x, block(a.weight[l], n, in), a.bias[l], none, none}, B, stream);
      if (last) return;
      x = block(a.post, s.batch, n);
      call_op(ReluArgs{x, out}, B, stream);
      in = n;
    }
  });
}

// The oracle: f64, each layer's output (and the interaction) rounded to the dtype as the
// composed path stores it.
void reference(const A& a) {
  const Shape s = validate(a, DeviceType::cpu);
  if (s.batch == 0) return;
  const DType dt = a.dense.dtype;
  const TensorView none{};
  Tensor x = Tensor::empty({s.batch, s.z}, DType::f64);
  const fk_op_fn interaction = OpRegistry::global().baseline(DlrmInteractionArgs::kName, DeviceType::cpu);
  const DlrmInteractionArgs ia{x.view(), a.dense, a.sparse};
  FK_CHECK(interaction != nullptr && interaction(&ia, nullptr) == FK_OK, kOp, ": the interaction reference failed: ",
           last_error_message());
  auto round_all = [dt](Tensor& t, bool relu) {
    for (int64_t i = 0; i < t.shape()[0]; ++i)
      for (int64_t j = 0; j < t.shape()[1]; ++j) {
        const double v = round_to_dtype(get(t.view(), i, j), dt);
        set(t.view(), relu ? std::max(v, 0.0) : v, i, j);
      }
  };
  round_all(x, false);
  int64_t in = s.z;
  for (int l = 0; l < a.layers; ++l) {
    const int64_t n = s.widths[static_cast<size_t>(l)];
    const bool last = l + 1 == a.layers;
    Tensor y = Tensor::empty({s.batch, n}, DType::f64);
    linear_reference(LinearArgs{y.view(), x.view(), block(a.weight[l], n, in), a.bias[l], none, none});
    if (last) {
      for (int64_t i = 0; i < s.batch; ++i)
        for (int64_t j = 0; j < n; ++j) set(a.logits, get(y.view(), i, j), i, j);
      return;
    }
    round_all(y, /*relu=*/true);
    x = std::move(y);
    in = n;
  }
}

fk_status dlrm_top_cpu(const void* args, void* stream) {
  const auto& a = *static_cast<const A*>(args);
  if (a.logits.dtype != DType::f64) return dlrm_top_composed_cpu(args, stream);
  return op_guard([&] { reference(a); });
}

// Workload fields: batch, features (F), dim (D), top (the layers' widths, the last DLRM's 1);
// dtype [bf16].
OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const int64_t b = wl_int(w, "batch"), f = wl_int(w, "features"), d = wl_int(w, "dim");
  const std::vector<int64_t> top = wl_int_list(w, "top");
  FK_CHECK(b >= 0 && f >= 1 && d >= 1 && !top.empty() && static_cast<int>(top.size()) <= A::kMaxLayers, kOp,
           " workload needs batch >= 0, features and dim >= 1 and 1 to ", A::kMaxLayers, " top widths; got ", w.dump());
  const DType dt = wl_dtype(w);
  OpCase c = begin_case<A>(w, layout.size());
  const int64_t z = d + (f + 1) * f / 2, widest = *std::max_element(top.begin(), top.end());
  c.tensors[0] = Tensor::empty({b, top.back()}, dt);
  // Pooled rows and the bottom MLP's output of order one (DLRM's relu output is >= 0).
  c.tensors[1] = random_tensor({b, d}, dt, seed, 1, 0.f, 1.f);
  c.tensors[2] = random_tensor({b, f, d}, dt, seed, 2, -0.5f, 0.5f);
  int64_t in = z;
  for (size_t l = 0; l < top.size(); ++l) {
    FK_CHECK(top[l] >= 1, kOp, " workload: top widths must be positive, got ", w.dump());
    // Weights of standard deviation 1/sqrt(fan-in) over the used columns, zeros in the padding.
    const float r = static_cast<float>(std::sqrt(3.0 / static_cast<double>(in)));
    Tensor wt = Tensor::zeros({top[l], padded8(in)}, dt);
    const Tensor used = random_tensor({top[l], in}, dt, seed, 10 + l, -r, r);
    for (int64_t i = 0; i < top[l]; ++i)
      for (int64_t j = 0; j < in; ++j) set(wt.view(), get(used.view(), i, j), i, j);
    c.tensors[3 + l] = std::move(wt);
    c.tensors[3 + A::kMaxLayers + l] = random_tensor({top[l]}, dt, seed, 30 + l, -0.1f, 0.1f);
    in = top[l];
  }
  const size_t ws = 3 + 2 * A::kMaxLayers;
  c.tensors[ws] = Tensor::empty({b, padded8(z)}, dt);
  c.tensors[ws + 1] = Tensor::empty({b, padded8(widest)}, dt);
  c.tensors[ws + 2] = Tensor::empty({b, padded8(widest)}, dt);
  c.as<A>().layers = static_cast<int32_t>(top.size());
  c.bind(layout);
  return c;
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  Json top = Json::array();
  for (int l = 0; l < a.layers; ++l) top.push_back(a.weight[l].shape[0]);
  return Json{{"batch", a.dense.shape[0]},
              {"features", a.sparse.shape[1]},
              {"dim", a.dense.shape[1]},
              {"top", top},
              {"dtype", std::string(dtype_name(a.dense.dtype))}};
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "recsys";
  d.level = "L3";
  d.summary = "DLRM's dot interaction and top MLP (linear, relu, ..., linear) over a batch of samples";
  d.args_size = sizeof(A);
  d.tensor_args = {{"logits", ArgRole::out, offsetof(A, logits)},
                   {"dense", ArgRole::in, offsetof(A, dense)},
                   {"sparse", ArgRole::in, offsetof(A, sparse)}};
  static const char* kWeightNames[] = {"weight_0", "weight_1", "weight_2", "weight_3",
                                       "weight_4", "weight_5", "weight_6", "weight_7"};
  static const char* kBiasNames[] = {"bias_0", "bias_1", "bias_2", "bias_3", "bias_4", "bias_5", "bias_6", "bias_7"};
  for (int l = 0; l < A::kMaxLayers; ++l)
    d.tensor_args.push_back({kWeightNames[l], ArgRole::in, offsetof(A, weight) + l * sizeof(TensorView)});
  for (int l = 0; l < A::kMaxLayers; ++l)
    d.tensor_args.push_back({kBiasNames[l], ArgRole::in, offsetof(A, bias) + l * sizeof(TensorView)});
  d.tensor_args.push_back({"interaction", ArgRole::workspace, offsetof(A, interaction)});
  d.tensor_args.push_back({"pre", ArgRole::workspace, offsetof(A, pre)});
  d.tensor_args.push_back({"post", ArgRole::workspace, offsetof(A, post)});
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double b = static_cast<double>(a.dense.shape[0]), f = static_cast<double>(a.sparse.shape[1]),
                 dim = static_cast<double>(a.dense.shape[1]);
    double flops = b * (f + 1) * f * dim, bytes = static_cast<double>(a.dense.nbytes() + a.sparse.nbytes() +
                                                                       a.logits.nbytes());
    double in = dim + (f + 1) * f / 2;
    for (int l = 0; l < a.layers; ++l) {
      const double n = static_cast<double>(a.weight[l].shape[0]);
      flops += 2 * b * n * in;
      bytes += static_cast<double>(a.weight[l].nbytes() + a.bias[l].nbytes());
      in = n;
    }
    return OpCost{bytes, flops, a.dense.dtype};
  };
  // The composed path and the oracle round at the same places; they differ by the GEMMs'
  // f32 accumulation, which can move a rounding by one unit, carried through the layers.
  d.tolerance = [](const OpCase& c, const TensorArg&, DType) {
    const double ulp = half_rounding_unit(c.as<A>().dense.dtype);
    return Tolerance{32 * ulp, 32 * ulp};
  };
  d.workload_from_call = workload_from_call;
  d.covers = {"dlrm_interaction", "linear", "relu"};
  d.composed[0] = dlrm_top_composed_cpu;
  d.composed[1] = dlrm_top_composed_cuda;
  d.architectures = {"dlrm"};
  d.test_workloads = {
      {{"batch", 5}, {"features", 3}, {"dim", 16}, {"top", {24, 8, 1}}},
      {{"batch", 3}, {"features", 26}, {"dim", 8}, {"top", {16, 1}}, {"dtype", "f16"}},
      {{"batch", 7}, {"features", 5}, {"dim", 12}, {"top", {10}}},
      {{"batch", 0}, {"features", 2}, {"dim", 8}, {"top", {8, 1}}},
  };
  // MLPerf's DLRM: 26 tables of 128, top MLP 1024-1024-512-256-1 over 479 features; a
  // latency batch, MLPerf's inference batch and a training-size batch.
  for (int64_t b : {1, 2048, 16384})
    d.bench_workloads.push_back(
        Json{{"batch", b}, {"features", 26}, {"dim", 128}, {"top", {1024, 1024, 512, 256, 1}}});
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("dlrm_top", cpu, dlrm_top_cpu);

}  // namespace

fk_status dlrm_top_composed_cpu(const void* args, void* stream) { return composed<DeviceType::cpu>(args, stream); }
fk_status dlrm_top_composed_cuda(const void* args, void* stream) { return composed<DeviceType::cuda>(args, stream); }

}  // namespace fk::ops
