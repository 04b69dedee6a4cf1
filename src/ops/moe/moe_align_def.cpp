// moe_align_block_size: definition (workloads, inputs, cost, output check) and CPU
// reference.
#include "ops/common/case_builder.h"
#include "ops/moe/moe_align.h"
#include "ops/moe/moe_case.h"
#include "ops/moe/moe_validate.h"

namespace fk::ops {
namespace {

using A = MoeAlignBlockSizeArgs;

fk_status align_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_align(a, DeviceType::cpu);
    align_reference(a.sorted_token_ids, a.expert_ids, a.num_tokens_post_padded, a.topk_ids, a.num_experts,
                    a.block_size);
  });
}

// Workload fields: tokens, topk, experts, block_size; routing (moe_case.h, default uniform).
OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const int64_t T = wl_int(w, "tokens"), k = wl_int(w, "topk"), E = wl_int(w, "experts"),
                bs = wl_int(w, "block_size");
  FK_CHECK(T >= 0 && k >= 1 && k <= E && bs >= 1, "moe_align_block_size workload needs tokens >= 0, "
           "1 <= topk <= experts and block_size >= 1, got ", w.dump());
  const int64_t S = moe_align_max_padded(T * k, E, bs);
  OpCase c = begin_case<A>(w, 5);
  c.tensors[0] = Tensor::empty({S}, DType::i32);
  c.tensors[1] = Tensor::empty({(S + bs - 1) / bs}, DType::i32);
  c.tensors[2] = Tensor::empty({1}, DType::i32);
  c.tensors[3] = make_topk_ids(T, k, E, routing_pattern(w), seed, 1);
  c.tensors[4] = Tensor::empty({moe_align_workspace_bytes(T * k, E)}, DType::u8);
  c.as<A>().num_experts = static_cast<int32_t>(E);
  c.as<A>().block_size = static_cast<int32_t>(bs);
  c.bind(layout);
  return c;
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "moe";
  d.level = "L1";
  d.summary = "slots grouped by expert, each expert padded to a multiple of block_size (vLLM moe_align_block_size)";
  d.args_size = sizeof(A);
  d.tensor_args = {{"sorted_token_ids", ArgRole::out, offsetof(A, sorted_token_ids)},
                   {"expert_ids", ArgRole::out, offsetof(A, expert_ids)},
                   {"num_tokens_post_padded", ArgRole::out, offsetof(A, num_tokens_post_padded)},
                   {"topk_ids", ArgRole::in, offsetof(A, topk_ids)},
                   {"workspace", ArgRole::workspace, offsetof(A, workspace)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double bytes = static_cast<double>(a.topk_ids.nbytes() + a.sorted_token_ids.nbytes() +
                                             a.expert_ids.nbytes() + a.num_tokens_post_padded.nbytes());
    return OpCost{bytes, 0.0, DType::f32};
  };
  d.check_outputs = [](const OpCase& host, const OpCase&, const OpCase& actual) {
    const auto& a = host.as<A>();
    const auto& got = actual.as<A>();
    return check_align(a.topk_ids, a.num_experts, a.block_size, got.sorted_token_ids, got.expert_ids,
                       got.num_tokens_post_padded);
  };
  using J = Json;
  d.test_workloads = {
      J{{"tokens", 1}, {"topk", 2}, {"experts", 8}, {"block_size", 16}},
      J{{"tokens", 7}, {"topk", 2}, {"experts", 8}, {"block_size", 16}},
      J{{"tokens", 33}, {"topk", 4}, {"experts", 64}, {"block_size", 16}},               // experts without slots
      J{{"tokens", 20}, {"topk", 1}, {"experts", 4}, {"block_size", 16}, {"routing", "same"}},  // one expert
      J{{"tokens", 5}, {"topk", 4}, {"experts", 4}, {"block_size", 4}},                   // k = E
      J{{"tokens", 40}, {"topk", 2}, {"experts", 8}, {"block_size", 8}, {"routing", "dropped"}},
      J{{"tokens", 100}, {"topk", 8}, {"experts", 128}, {"block_size", 64}, {"routing", "skewed"}},
      J{{"tokens", 9}, {"topk", 2}, {"experts", 1000}, {"block_size", 16}},
      J{{"tokens", 3000}, {"topk", 2}, {"experts", 64}, {"block_size", 128}},  // several 1024-slot chunks
      J{{"tokens", 1500}, {"topk", 3}, {"experts", 5}, {"block_size", 1}},
      J{{"tokens", 0}, {"topk", 2}, {"experts", 8}, {"block_size", 16}},
  };
  // Qwen3-30B-A3B (128 experts, top-8) with the fused-experts block sizes of decode and
  // prefill; DeepSeek-V3 (256, top-8) prefill.
  const int64_t qwen3[][2] = {{1, 16}, {64, 16}, {256, 64}, {8192, 128}};  // tokens, block size
  for (const auto& tb : qwen3)
    d.bench_workloads.push_back(J{{"tokens", tb[0]}, {"topk", 8}, {"experts", 128}, {"block_size", tb[1]}});
  d.bench_workloads.push_back(J{{"tokens", 8192}, {"topk", 8}, {"experts", 256}, {"block_size", 128}});
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("moe_align_block_size", cpu, align_cpu);

}  // namespace
}  // namespace fk::ops
