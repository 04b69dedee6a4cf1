// causal_conv1d_update: definition (workloads, inputs, cost, capture) and CPU
// implementation. Workload fields: batch (sequences, required), tokens (new tokens per
// sequence, 1; x is [batch, dim] when the field is absent, [batch, tokens, dim] when it is
// given), and the fields of conv_shape (causal_conv1d_case.h): dim, width, dtype, bias,
// silu, extra_slots, padding.
#include <algorithm>
#include <string>

#include "ops/common/case_builder.h"
#include "ops/ssm/causal_conv1d_case.h"
#include "ops/ssm/causal_conv1d_reference.h"
#include "ops/ssm/causal_conv1d_validate.h"

namespace fk::ops {
namespace {

using A = CausalConv1dUpdateArgs;
using namespace conv_case;

fk_status causal_conv1d_update_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_causal_conv1d_update(a, DeviceType::cpu);
    causal_conv1d_update_reference(a);
  });
}

OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const ConvShape s = conv_shape(w, A::kName);
  const int64_t B = wl_int(w, "batch");
  const bool multi = w.contains("tokens");
  const int64_t N = wl_int(w, "tokens", 1);
  FK_CHECK(B >= 0 && N >= 1, A::kName, " workload needs batch >= 0 and tokens >= 1, got ", w.dump());
  const Shape x_shape = multi ? Shape{B, N, s.dim} : Shape{B, s.dim};
  OpCase c = begin_case<A>(w, 6);
  c.tensors[0] = Tensor::empty(x_shape, s.dtype);
  c.tensors[1] = random_tensor(x_shape, s.dtype, seed, kStreamX, -2.f, 2.f);
  c.tensors[2] = conv_weight(s, seed);
  c.tensors[3] = conv_bias_or_absent(s, seed);
  c.tensors[4] = conv_state_pool(s, B, seed);
  c.tensors[5] = conv_state_indices(s, B, seed);
  c.as<A>().silu = s.silu ? 1 : 0;
  c.bind(layout);
  return c;
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  const std::vector<int64_t> slots = read_ints(a.state_indices);
  std::vector<int64_t> padding;
  for (size_t b = 0; b < slots.size(); ++b)
    if (slots[b] < 0) padding.push_back(static_cast<int64_t>(b));
  Json w{{"batch", a.x.shape[0]},
         {"dim", a.x.shape[a.x.rank - 1]},
         {"width", a.weight.shape[1]},
         {"dtype", std::string(dtype_name(a.x.dtype))},
         {"bias", arg_present(a.bias)},
         {"silu", a.silu != 0},
         {"extra_slots", std::max<int64_t>(0, a.conv_state.shape[0] - a.x.shape[0])}};
  if (a.x.rank == 3) w["tokens"] = a.x.shape[1];
  if (!padding.empty()) w["padding"] = padding;
  return w;
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "ssm";
  d.level = "L1";
  d.summary =
      "decode step of the depthwise causal conv: one or several new tokens per sequence continue from its "
      "conv-state slot (updated in place), optional bias and SiLU";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out), RowStride::any},
                   {"x", ArgRole::in, offsetof(A, x), RowStride::any},
                   {"weight", ArgRole::in, offsetof(A, weight)},
                   {"bias", ArgRole::in, offsetof(A, bias)},
                   {"conv_state", ArgRole::inout, offsetof(A, conv_state), RowStride::any},
                   {"state_indices", ArgRole::in, offsetof(A, state_indices)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double n = static_cast<double>(a.x.numel()), es = static_cast<double>(a.x.element_size());
    return OpCost{2.0 * n * es + conv_weight_and_state_bytes(a.weight, a.bias, a.conv_state, a.x.shape[0]) +
                      static_cast<double>(a.state_indices.nbytes()),
                  n * (2.0 * static_cast<double>(a.weight.shape[1]) + (a.silu ? 4.0 : 0.0)), DType::f32};
  };
  // Edge shapes: one sequence, every width, several tokens per sequence (more than the
  // state holds, too), padding sequences, channel counts off the 16-byte vector and past a
  // block, bias, no SiLU, f16 and f32, an empty batch.
  d.test_workloads = {
      {{"batch", 1}, {"dim", 16}},
      {{"batch", 5}, {"dim", 24}, {"bias", true}},
      {{"batch", 3}, {"dim", 32}, {"width", 2}},
      {{"batch", 3}, {"dim", 40}, {"width", 3}, {"silu", false}},
      {{"batch", 4}, {"tokens", 3}, {"dim", 16}},
      {{"batch", 2}, {"tokens", 7}, {"dim", 24}, {"bias", true}},
      {{"batch", 4}, {"dim", 16}, {"padding", {0, 2}}},
      {{"batch", 3}, {"tokens", 2}, {"dim", 16}, {"padding", {1}}},
      {{"batch", 6}, {"dim", 13}, {"bias", true}},
      {{"batch", 3}, {"dim", 1040}, {"extra_slots", 0}},
      {{"batch", 5}, {"tokens", 2}, {"dim", 48}, {"dtype", "f16"}},
      {{"batch", 3}, {"dim", 20}, {"dtype", "f32"}, {"bias", true}},
      {{"batch", 0}, {"dim", 8}},
  };
  // Qwen3-Next-80B-A3B's gated-DeltaNet conv (8192 channels, 4 taps, SiLU): decode batches
  // of 1, 32 and 256 in a pool of 512 slots, and 3 tokens a sequence (one draft pair of
  // multi-token prediction plus the accepted token).
  const auto qwen3_next = [](int64_t batch, int64_t tokens) {
    Json w{{"batch", batch}, {"dim", 8192}, {"width", 4}, {"extra_slots", 512 - batch}};
    if (tokens > 1) w["tokens"] = tokens;
    return w;
  };
  d.bench_workloads = {qwen3_next(1, 1), qwen3_next(32, 1), qwen3_next(256, 1), qwen3_next(32, 3)};
  d.workload_from_call = workload_from_call;
  d.architectures = {"qwen3_next"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("causal_conv1d_update", cpu, causal_conv1d_update_cpu);

}  // namespace
}  // namespace fk::ops
