// embedding: definition (workloads, inputs, cost) and CPU reference.
// Workload fields: tokens, vocab, hidden, dtype (table/out, bf16), ids_dtype (i32 or i64; i32).
#include "fk/element.h"
#include "fk/ops/embedding.h"
#include "ops/common/case_builder.h"
#include "ops/embedding/embedding_validate.h"

namespace fk::ops {
namespace {

constexpr const char* kOp = EmbeddingArgs::kName;

fk_status embedding_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const EmbeddingArgs*>(args);
    validate_embedding(a, DeviceType::cpu);
    const int64_t T = a.ids.shape[0], V = a.table.shape[0], H = a.table.shape[1];
    // Every id is checked before anything is written.
    for (int64_t t = 0; t < T; ++t) {
      const int64_t id = get_index(a.ids, t);
      FK_CHECK(id >= 0 && id < V, kOp, ": ids[", t, "] = ", id, " is out of range for a table of ", V, " rows");
    }
    for (int64_t t = 0; t < T; ++t) {
      const int64_t id = get_index(a.ids, t);
      for (int64_t h = 0; h < H; ++h) set(a.out, get(a.table, id, h), t, h);
    }
  });
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const EmbeddingArgs*>(args);
  return Json{{"tokens", a.ids.shape[0]},
              {"hidden", a.table.shape[1]},
              {"vocab", a.table.shape[0]},
              {"dtype", std::string(dtype_name(a.table.dtype))},
              {"ids_dtype", std::string(dtype_name(a.ids.dtype))}};
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "embedding";
  d.level = "L1";
  d.summary = "out[t, :] = table[ids[t], :] (token embedding gather)";
  d.args_size = sizeof(EmbeddingArgs);
  d.tensor_args = {{"out", ArgRole::out, offsetof(EmbeddingArgs, out), RowStride::any},
                   {"ids", ArgRole::in, offsetof(EmbeddingArgs, ids)},
                   {"table", ArgRole::in, offsetof(EmbeddingArgs, table), RowStride::any}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const int64_t T = wl_int(w, "tokens"), V = wl_int(w, "vocab"), H = wl_int(w, "hidden");
    const DType dt = wl_dtype(w);
    const DType ids_dt = wl_dtype(w, "ids_dtype", DType::i32);
    FK_CHECK(T >= 0 && V > 0 && H > 0, kOp, " workload needs tokens >= 0, vocab > 0, hidden > 0, got ", w.dump());
    FK_CHECK(dt == DType::f32 || dt == DType::f16 || dt == DType::bf16, kOp,
             " workload dtype must be f32, f16 or bf16, got ", w.dump());
    FK_CHECK(ids_dt == DType::i32 || ids_dt == DType::i64, kOp, " workload ids_dtype must be i32 or i64, got ",
             w.dump());
    FK_CHECK(V <= (int64_t{1} << 31), kOp, " workload vocab must be at most 2^31, got ", w.dump());
    OpCase c = begin_case<EmbeddingArgs>(w, 3);
    c.tensors[0] = Tensor::empty({T, H}, dt);
    c.tensors[1] = random_int_tensor({T}, ids_dt, seed, 1, 0, V);
    c.tensors[2] = random_tensor({V, H}, dt, seed, 2, -1.f, 1.f);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<EmbeddingArgs>();
    // Each gathered row read once, each out row written once, the ids read once.
    return OpCost{2.0 * static_cast<double>(a.out.nbytes()) + static_cast<double>(a.ids.nbytes()), 0.0,
                  DType::f32};
  };
  d.test_workloads = {
      {{"tokens", 1}, {"vocab", 10}, {"hidden", 8}},                           // one token, one vector
      {{"tokens", 17}, {"vocab", 64}, {"hidden", 4096}, {"ids_dtype", "i64"}},  // production row, i64 ids
      {{"tokens", 5}, {"vocab", 100}, {"hidden", 1000}},                       // ragged last block
      {{"tokens", 2}, {"vocab", 5}, {"hidden", 100000}, {"dtype", "f32"}},     // long rows over many blocks
      {{"tokens", 33}, {"vocab", 64}, {"hidden", 2048}, {"dtype", "f16"}},     // f16, repeated ids
      {{"tokens", 2}, {"vocab", 7}, {"hidden", 3}},                            // scalar path
      {{"tokens", 3}, {"vocab", 50}, {"hidden", 4097}, {"dtype", "f16"}, {"ids_dtype", "i64"}},
      {{"tokens", 0}, {"vocab", 10}, {"hidden", 128}},                         // nothing to do
  };
  d.bench_workloads = {
      {{"tokens", 16384}, {"vocab", 128256}, {"hidden", 4096}},  // Llama-3.1-8B prefill chunk
      {{"tokens", 1}, {"vocab", 128256}, {"hidden", 4096}},      // single decode
      {{"tokens", 256}, {"vocab", 128256}, {"hidden", 4096}},    // decode batch
      {{"tokens", 16384}, {"vocab", 32768}, {"hidden", 4096}, {"ids_dtype", "i64"}},  // Mistral-7B v0.3
  };
  d.workload_from_call = workload_from_call;
  // The token lookup and the gather of the rows that need logits.
  d.architectures = {"llama",  "mistral", "qwen2",     "qwen3",     "gemma", "gemma2",
                     "gemma3", "mixtral", "qwen3_moe", "qwen2_moe", "olmoe"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("embedding", cpu, embedding_cpu);

}  // namespace
}  // namespace fk::ops
