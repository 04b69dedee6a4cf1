// moe_unpermute_sum: definition (workloads, inputs, cost) and CPU reference.
#include <numeric>
#include <vector>

#include "fk/element.h"
#include "fk/philox.h"
#include "ops/common/case_builder.h"
#include "ops/moe/moe_validate.h"

namespace fk::ops {
namespace {

using A = MoeUnpermuteSumArgs;

void unpermute_sum_reference(const A& a) {
  const int64_t T = a.inv_perm.shape[0], k = a.inv_perm.shape[1], H = a.permuted.shape[1],
                P = a.permuted.shape[0];
  const bool weighted = arg_present(a.topk_weights);
  std::vector<double> acc(static_cast<size_t>(H));
  for (int64_t t = 0; t < T; ++t) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t row = get_index(a.inv_perm, t, j);
      if (row < 0 || row >= P) continue;
      const double w = weighted ? get(a.topk_weights, t, j) : 1.0;
      for (int64_t h = 0; h < H; ++h) acc[static_cast<size_t>(h)] += w * get(a.permuted, row, h);
    }
    for (int64_t h = 0; h < H; ++h) set(a.out, acc[static_cast<size_t>(h)], t, h);
  }
}

fk_status unpermute_sum_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_unpermute_sum(a, DeviceType::cpu);
    unpermute_sum_reference(a);
  });
}

// Workload fields: tokens, topk, hidden; rows (of `permuted`, default tokens * topk + 5);
// weights (bool, default true); dropped (bool: about one slot in five has inv_perm -1);
// dtype (bf16 default). inv_perm maps the slots onto distinct random rows.
OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const int64_t T = wl_int(w, "tokens"), k = wl_int(w, "topk"), H = wl_int(w, "hidden");
  const int64_t P = wl_int(w, "rows", T * k + 5);
  const DType dt = wl_dtype(w);
  FK_CHECK(T >= 0 && k >= 1 && H >= 1 && P >= T * k, "moe_unpermute_sum workload needs tokens >= 0, topk >= 1, "
           "hidden >= 1 and rows >= tokens * topk, got ", w.dump());
  OpCase c = begin_case<A>(w, 4);
  c.tensors[0] = Tensor::empty({T, H}, dt);
  c.tensors[1] = random_tensor({P, H}, dt, seed, 1, -2.f, 2.f);
  std::vector<int32_t> rows(static_cast<size_t>(P));
  std::iota(rows.begin(), rows.end(), 0);
  for (int64_t i = P - 1; i > 0; --i)
    std::swap(rows[static_cast<size_t>(i)], rows[static_cast<size_t>(philox_int(seed, 2, static_cast<uint64_t>(i), 0, i + 1))]);
  const bool dropped = wl_bool(w, "dropped", false);
  c.tensors[2] = Tensor::empty({T, k}, DType::i32);
  for (int64_t i = 0; i < T * k; ++i)
    c.tensors[2].data_as<int32_t>()[i] =
        dropped && philox_int(seed, 3, static_cast<uint64_t>(i), 0, 5) == 0 ? -1 : rows[static_cast<size_t>(i)];
  c.tensors[3] = wl_bool(w, "weights", true) ? random_tensor({T, k}, DType::f32, seed, 4, 0.f, 1.f)
                                              : Tensor::empty({0}, DType::f32);
  c.bind(layout);
  return c;
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "moe";
  d.level = "L1";
  d.summary = "out[t] = sum_j topk_weights[t, j] * permuted[inv_perm[t, j]]: the weighted combine of expert outputs";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out), RowStride::any},
                   {"permuted", ArgRole::in, offsetof(A, permuted), RowStride::any},
                   {"inv_perm", ArgRole::in, offsetof(A, inv_perm)},
                   {"topk_weights", ArgRole::in, offsetof(A, topk_weights)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double slots = static_cast<double>(a.inv_perm.numel()), H = static_cast<double>(a.permuted.shape[1]);
    const double bytes = slots * H * static_cast<double>(a.permuted.element_size()) +
                         static_cast<double>(a.out.nbytes() + a.inv_perm.nbytes() + a.topk_weights.nbytes());
    return OpCost{bytes, 2.0 * slots * H, DType::f32};
  };
  using J = Json;
  d.test_workloads = {
      J{{"tokens", 1}, {"topk", 2}, {"hidden", 64}},
      J{{"tokens", 7}, {"topk", 8}, {"hidden", 72}},
      J{{"tokens", 33}, {"topk", 4}, {"hidden", 2048}, {"dtype", "f16"}},
      J{{"tokens", 5}, {"topk", 1}, {"hidden", 100}, {"weights", false}},
      J{{"tokens", 9}, {"topk", 3}, {"hidden", 8}, {"dtype", "f32"}},
      J{{"tokens", 12}, {"topk", 2}, {"hidden", 3}},  // not a multiple of the vector width
      J{{"tokens", 10}, {"topk", 2}, {"hidden", 64}, {"dropped", true}},
      J{{"tokens", 0}, {"topk", 2}, {"hidden", 64}},
  };
  // Qwen3-30B-A3B (hidden 2048, top-8) decode and prefill; Mixtral (4096, top-2) prefill.
  for (int64_t t : {1, 64, 256, 8192}) d.bench_workloads.push_back(J{{"tokens", t}, {"topk", 8}, {"hidden", 2048}});
  d.bench_workloads.push_back(J{{"tokens", 8192}, {"topk", 2}, {"hidden", 4096}});
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("moe_unpermute_sum", cpu, unpermute_sum_cpu);

}  // namespace
}  // namespace fk::ops
