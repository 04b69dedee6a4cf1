// causal_conv1d: definition (workloads, inputs, cost, capture) and CPU implementation.
// Workload fields: seq_lens (tokens per sequence, required; 0 allowed), initial (which
// sequences continue from their slot's state: "mixed" (default, a random half), "all",
// "none", or "absent" for no has_initial_state tensor), and the fields of conv_shape
// (causal_conv1d_case.h): dim, width, dtype, bias, silu, extra_slots, padding.
#include <algorithm>
#include <numeric>
#include <string>

#include "fk/philox.h"
#include "ops/common/case_builder.h"
#include "ops/ssm/causal_conv1d_case.h"
#include "ops/ssm/causal_conv1d_reference.h"
#include "ops/ssm/causal_conv1d_validate.h"

namespace fk::ops {
namespace {

using A = CausalConv1dArgs;
using namespace conv_case;

fk_status causal_conv1d_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_causal_conv1d(a, DeviceType::cpu);
    causal_conv1d_reference(a);
  });
}

Tensor has_initial_state(const Json& w, int64_t batch, uint64_t seed) {
  const std::string mode = wl_string(w, "initial", "mixed");
  FK_CHECK(mode == "mixed" || mode == "all" || mode == "none" || mode == "absent", A::kName,
           " workload field 'initial' must be mixed, all, none or absent, got ", w.dump());
  if (mode == "absent") return absent_tensor(DType::boolean);
  Tensor t = Tensor::empty({batch}, DType::boolean);
  for (int64_t b = 0; b < batch; ++b)
    t.data_as<uint8_t>()[b] = mode == "all" ? 1 : mode == "none" ? 0 : static_cast<uint8_t>(philox_int(seed, kStreamInitial, static_cast<uint64_t>(b), 0, 2));
  return t;
}

OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const ConvShape s = conv_shape(w, A::kName);
  const std::vector<int64_t> lens = wl_int_list(w, "seq_lens");
  std::vector<int64_t> cu{0};
  for (int64_t L : lens) {
    FK_CHECK(L >= 0, A::kName, " workload seq_lens must be >= 0, got ", w.dump());
    cu.push_back(cu.back() + L);
  }
  const int64_t B = static_cast<int64_t>(lens.size()), T = cu.back();
  OpCase c = begin_case<A>(w, 8);
  c.tensors[0] = Tensor::empty({T, s.dim}, s.dtype);
  c.tensors[1] = random_tensor({T, s.dim}, s.dtype, seed, kStreamX, -2.f, 2.f);
  c.tensors[2] = conv_weight(s, seed);
  c.tensors[3] = conv_bias_or_absent(s, seed);
  c.tensors[4] = conv_state_pool(s, B, seed);
  c.tensors[5] = i32_vector(cu);
  c.tensors[6] = conv_state_indices(s, B, seed);
  c.tensors[7] = has_initial_state(w, B, seed);
  c.as<A>().silu = s.silu ? 1 : 0;
  c.bind(layout);
  return c;
}

// The workload of a captured call: the batch layout read back from the device metadata.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  const std::vector<int64_t> cu = read_ints(a.cu_seqlens), slots = read_ints(a.state_indices);
  std::vector<int64_t> lens, padding;
  for (size_t b = 0; b + 1 < cu.size(); ++b) lens.push_back(cu[b + 1] - cu[b]);
  for (size_t b = 0; b < slots.size(); ++b)
    if (slots[b] < 0) padding.push_back(static_cast<int64_t>(b));
  Json w{{"seq_lens", lens},
         {"dim", a.x.shape[1]},
         {"width", a.weight.shape[1]},
         {"dtype", std::string(dtype_name(a.x.dtype))},
         {"bias", arg_present(a.bias)},
         {"silu", a.silu != 0},
         // A pool smaller than the batch (padding sequences hold no slot) rebuilds with one slot a sequence.
         {"extra_slots", std::max<int64_t>(0, a.conv_state.shape[0] - static_cast<int64_t>(slots.size()))}};
  if (!padding.empty()) w["padding"] = padding;
  if (!arg_present(a.has_initial_state)) {
    w["initial"] = "absent";
  } else {
    const std::vector<int64_t> init = read_ints(a.has_initial_state);
    const auto n = std::accumulate(init.begin(), init.end(), int64_t{0}, [](int64_t acc, int64_t v) { return acc + (v != 0); });
    w["initial"] = n == 0 ? "none" : n == static_cast<int64_t>(init.size()) ? "all" : "mixed";
  }
  return w;
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "ssm";
  d.level = "L1";
  d.summary =
      "depthwise causal conv over time per channel of token-packed sequences (cu_seqlens), each from its "
      "conv-state slot or zeros, optional bias and SiLU; the slots updated to the last width - 1 inputs";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out), RowStride::any},
                   {"x", ArgRole::in, offsetof(A, x), RowStride::any},
                   {"weight", ArgRole::in, offsetof(A, weight)},
                   {"bias", ArgRole::in, offsetof(A, bias)},
                   {"conv_state", ArgRole::inout, offsetof(A, conv_state), RowStride::any},
                   {"cu_seqlens", ArgRole::in, offsetof(A, cu_seqlens)},
                   {"state_indices", ArgRole::in, offsetof(A, state_indices)},
                   {"has_initial_state", ArgRole::in, offsetof(A, has_initial_state)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double n = static_cast<double>(a.x.numel()), es = static_cast<double>(a.x.element_size());
    const int64_t B = a.cu_seqlens.shape[0] - 1;
    // x read and out written once; W multiply-adds per output, plus the SiLU (about 4 flops).
    return OpCost{2.0 * n * es + conv_weight_and_state_bytes(a.weight, a.bias, a.conv_state, B) +
                      static_cast<double>(a.cu_seqlens.nbytes() + a.state_indices.nbytes()),
                  n * (2.0 * static_cast<double>(a.weight.shape[1]) + (a.silu ? 4.0 : 0.0)), DType::f32};
  };
  // Edge shapes: sequences shorter than width - 1 (the state shifts), empty sequences and an
  // empty batch, every width, padding sequences, no has_initial_state, channel counts that
  // are not a multiple of the 16-byte vector (scalar path) and that leave a partial block,
  // sequences crossing the CUDA kernel's token runs, f16 and f32.
  d.test_workloads = {
      {{"seq_lens", {5}}, {"dim", 16}},
      {{"seq_lens", {1, 2, 3, 7, 0, 12}}, {"dim", 24}},
      {{"seq_lens", {1, 2, 3, 7, 0, 12}}, {"dim", 24}, {"initial", "all"}},
      {{"seq_lens", {2, 9}}, {"dim", 32}, {"width", 2}, {"bias", true}},
      {{"seq_lens", {1, 5, 2}}, {"dim", 40}, {"width", 3}, {"silu", false}, {"initial", "all"}},
      {{"seq_lens", {4, 6, 3}}, {"dim", 16}, {"padding", {1}}, {"initial", "all"}},
      {{"seq_lens", {3, 20}}, {"dim", 13}, {"bias", true}, {"initial", "all"}},
      {{"seq_lens", {37, 1, 70, 16, 17}}, {"dim", 264}, {"initial", "absent"}},
      {{"seq_lens", {33, 2}}, {"dim", 1040}, {"bias", true}},
      {{"seq_lens", {9, 4}}, {"dim", 48}, {"dtype", "f16"}, {"initial", "all"}},
      {{"seq_lens", {9, 2}}, {"dim", 20}, {"dtype", "f32"}, {"bias", true}, {"initial", "all"}},
      {{"seq_lens", {0, 0}}, {"dim", 8}, {"initial", "all"}},
      {{"seq_lens", Json::array()}, {"dim", 8}},
  };
  // Qwen3-Next-80B-A3B's gated-DeltaNet conv (q, k, v channels: 2 x 16 x 128 + 32 x 128 =
  // 8192, 4 taps, SiLU, no bias): one long prompt, 8 and 64 prompts, and chunks continuing
  // from state (chunked prefill).
  const auto qwen3_next = [](std::vector<int64_t> lens, const char* initial) {
    return Json{{"seq_lens", lens}, {"dim", 8192}, {"width", 4}, {"initial", initial}};
  };
  d.bench_workloads = {qwen3_next({32768}, "none"), qwen3_next(std::vector<int64_t>(8, 4096), "none"),
                       qwen3_next(std::vector<int64_t>(64, 512), "none"), qwen3_next({8192}, "all"),
                       qwen3_next({2048, 2048, 1024, 3072}, "mixed")};
  d.workload_from_call = workload_from_call;
  d.architectures = {"qwen3_next"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("causal_conv1d", cpu, causal_conv1d_cpu);

}  // namespace
}  // namespace fk::ops
