// weighted_embedding_add: definition (workloads, inputs, cost) and the CPU reference in
// double (also the CPU implementation).
// Workload fields: tokens, taps [4], vocab, hidden, dtype (out/table, bf16), ids_dtype (i32
// or i64; i32). Weights are uniform in [0, 1) (bilinear weights are in that range).
#include <vector>

#include "fk/element.h"
#include "ops/common/case_builder.h"
#include "ops/embedding/weighted_embedding_add_validate.h"

namespace fk::ops {
namespace {

using A = WeightedEmbeddingAddArgs;

fk_status weighted_embedding_add_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_weighted_embedding_add(a, DeviceType::cpu);
    const int64_t T = a.ids.shape[0], K = a.ids.shape[1], V = a.table.shape[0], H = a.table.shape[1];
    // Every id is checked before anything is written.
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < K; ++j) {
        const int64_t id = get_index(a.ids, t, j);
        FK_CHECK(id >= 0 && id < V, A::kName, ": ids[", t, ", ", j, "] = ", id, " is out of range for a table of ", V,
                 " rows");
      }
    std::vector<double> acc(static_cast<size_t>(H));
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t h = 0; h < H; ++h) acc[static_cast<size_t>(h)] = get(a.out, t, h);
      for (int64_t j = 0; j < K; ++j) {
        const int64_t id = get_index(a.ids, t, j);
        const double w = get(a.weights, t, j);
        for (int64_t h = 0; h < H; ++h) acc[static_cast<size_t>(h)] += w * get(a.table, id, h);
      }
      for (int64_t h = 0; h < H; ++h) set(a.out, acc[static_cast<size_t>(h)], t, h);
    }
  });
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  return Json{{"tokens", a.ids.shape[0]},
              {"taps", a.ids.shape[1]},
              {"vocab", a.table.shape[0]},
              {"hidden", a.table.shape[1]},
              {"dtype", std::string(dtype_name(a.table.dtype))},
              {"ids_dtype", std::string(dtype_name(a.ids.dtype))}};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "embedding";
  d.level = "L1";
  d.summary = "out[t, :] += sum_j weights[t, j] * table[ids[t, j], :], in place (bilinear position-embedding "
              "interpolation: 4 taps)";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::inout, offsetof(A, out), RowStride::any},
                   {"ids", ArgRole::in, offsetof(A, ids)},
                   {"weights", ArgRole::in, offsetof(A, weights)},
                   {"table", ArgRole::in, offsetof(A, table), RowStride::any}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const int64_t T = wl_int(w, "tokens"), K = wl_int(w, "taps", 4), V = wl_int(w, "vocab"), H = wl_int(w, "hidden");
    const DType dt = wl_dtype(w);
    const DType ids_dt = wl_dtype(w, "ids_dtype", DType::i32);
    FK_CHECK(T >= 0 && K >= 1 && K <= kWeightedEmbeddingMaxTaps && V > 0 && H > 0, A::kName,
             " workload needs tokens >= 0, taps in [1, 16], vocab > 0, hidden > 0, got ", w.dump());
    FK_CHECK(dt == DType::f32 || dt == DType::f16 || dt == DType::bf16, A::kName,
             " workload dtype must be f32, f16 or bf16, got ", w.dump());
    FK_CHECK(ids_dt == DType::i32 || ids_dt == DType::i64, A::kName, " workload ids_dtype must be i32 or i64, got ",
             w.dump());
    OpCase c = begin_case<A>(w, 4);
    c.tensors[0] = random_tensor({T, H}, dt, seed, 1, -1.f, 1.f);
    c.tensors[1] = random_int_tensor({T, K}, ids_dt, seed, 2, 0, V);
    c.tensors[2] = random_tensor({T, K}, DType::f32, seed, 3, 0.f, 1.f);
    c.tensors[3] = random_tensor({V, H}, dt, seed, 4, -1.f, 1.f);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double T = static_cast<double>(a.ids.shape[0]), K = static_cast<double>(a.ids.shape[1]);
    const double H = static_cast<double>(a.table.shape[1]), es = static_cast<double>(a.table.element_size());
    // out read and written, K gathered rows per token (at most the table once each when
    // tokens share rows, as neighbouring patches do: the gather is mostly L2 hits), ids and
    // weights read once; a multiply-add per tap and element.
    const double rows = std::min(T * K, static_cast<double>(a.table.shape[0]));
    return OpCost{2.0 * T * H * es + rows * H * es + static_cast<double>(a.ids.nbytes() + a.weights.nbytes()),
                  2.0 * T * K * H, DType::f32};
  };
  d.test_workloads = {
      {{"tokens", 1}, {"vocab", 16}, {"hidden", 8}},
      {{"tokens", 37}, {"vocab", 2304}, {"hidden", 1152}},  // Qwen3-VL's vision grid and width
      {{"tokens", 5}, {"vocab", 100}, {"hidden", 1000}, {"ids_dtype", "i64"}},
      {{"tokens", 2}, {"vocab", 5}, {"hidden", 100000}, {"dtype", "f32"}},  // long rows over many blocks
      {{"tokens", 33}, {"taps", 1}, {"vocab", 64}, {"hidden", 1280}, {"dtype", "f16"}},
      {{"tokens", 6}, {"taps", 16}, {"vocab", 9}, {"hidden", 3}},  // scalar width, every tap
      {{"tokens", 4}, {"taps", 3}, {"vocab", 50}, {"hidden", 4097}, {"dtype", "f16"}, {"ids_dtype", "i64"}},
      {{"tokens", 0}, {"vocab", 10}, {"hidden", 128}},
  };
  // Qwen3-VL-8B's vision tower (48 x 48 grid of 1152): one 1024^2 image (64 x 64 patches),
  // a 448^2 image (28 x 28), a 4-frame 448^2 video clip.
  for (int64_t t : {4096, 784, 3136})
    d.bench_workloads.push_back({{"tokens", t}, {"vocab", 2304}, {"hidden", 1152}});
  d.workload_from_call = workload_from_call;
  d.architectures = {"qwen3_vl"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("weighted_embedding_add", cpu, weighted_embedding_add_cpu);

}  // namespace
}  // namespace fk::ops
