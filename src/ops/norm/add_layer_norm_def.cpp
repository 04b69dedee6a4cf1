// add_layer_norm: definition (workloads, inputs, cost) and CPU reference (the residual add
// of a post-norm encoder layer fused with its LayerNorm).
#include "fk/ops/norm.h"
#include "ops/norm/norm_defs.h"
#include "ops/norm/norm_reference.h"
#include "ops/norm/norm_validate.h"

namespace fk::ops {
namespace {

constexpr const char* kOp = AddLayerNormArgs::kName;

fk_status add_layer_norm_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const AddLayerNormArgs*>(args);
    validate_add_layer_norm(a, DeviceType::cpu);
    layer_norm_reference(a.out, a.input, a.weight, a.bias.data ? &a.bias : nullptr, a.eps, &a.residual);
  });
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const AddLayerNormArgs*>(args);
  return Json{{"tokens", a.input.shape[0]},
              {"hidden", a.input.shape[1]},
              {"dtype", std::string(dtype_name(a.input.dtype))},
              {"eps", a.eps},
              {"bias", a.bias.data != nullptr}};
}

// Workload fields: tokens, hidden, dtype (bf16), eps (1e-5, torch's default), bias (true).
OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "norm";
  d.level = "L2";
  d.summary = "out = layer_norm(round(input + residual)) * weight + bias (bias optional), per row";
  d.args_size = sizeof(AddLayerNormArgs);
  d.tensor_args = {{"out", ArgRole::out, offsetof(AddLayerNormArgs, out), RowStride::any},
                   {"input", ArgRole::in, offsetof(AddLayerNormArgs, input), RowStride::any},
                   {"residual", ArgRole::in, offsetof(AddLayerNormArgs, residual), RowStride::any},
                   {"weight", ArgRole::in, offsetof(AddLayerNormArgs, weight)},
                   {"bias", ArgRole::in, offsetof(AddLayerNormArgs, bias)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    Json with_eps = w;
    if (!with_eps.contains("eps")) with_eps["eps"] = 1e-5;
    const NormShape s = norm_shape(with_eps, kOp);
    OpCase c = begin_case<AddLayerNormArgs>(w, 5);
    c.tensors[0] = Tensor::empty({s.tokens, s.hidden}, s.dtype);
    // A sub-layer output around zero onto a hidden state with an offset: the mean matters.
    c.tensors[1] = random_tensor({s.tokens, s.hidden}, s.dtype, seed, 1, -1.f, 1.f);
    c.tensors[2] = random_tensor({s.tokens, s.hidden}, s.dtype, seed, 2, -1.f, 3.f);
    c.tensors[3] = random_tensor({s.hidden}, s.dtype, seed, 3, 0.5f, 1.5f);
    if (wl_bool(w, "bias", true)) c.tensors[4] = random_tensor({s.hidden}, s.dtype, seed, 4, -0.5f, 0.5f);
    c.as<AddLayerNormArgs>().eps = s.eps;
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<AddLayerNormArgs>();
    const double n = static_cast<double>(a.input.numel());
    const double bias_bytes = a.bias.data ? static_cast<double>(a.bias.nbytes()) : 0.0;
    return OpCost{3.0 * n * a.input.element_size() + a.weight.nbytes() + bias_bytes, 8.0 * n, DType::f32};
  };
  d.workload_from_call = workload_from_call;
  d.test_workloads = norm_test_workloads();
  for (const Json& w : std::vector<Json>{
           {{"tokens", 5}, {"hidden", 1000}, {"bias", false}},
           {{"tokens", 2}, {"hidden", 3}},
           {{"tokens", 3}, {"hidden", 1024}, {"dtype", "f16"}},
           {{"tokens", 2}, {"hidden", 40000}, {"bias", false}, {"dtype", "f32"}},
           {{"tokens", 2}, {"hidden", 40001}, {"dtype", "bf16"}},  // looped path, unaligned rows
       })
    d.test_workloads.push_back(w);
  d.bench_workloads = {
      {{"tokens", 16384}, {"hidden", 1024}, {"dtype", "f16"}, {"eps", 1e-5}},  // BGE-M3, 32 x 512 tokens
      {{"tokens", 512}, {"hidden", 1024}, {"dtype", "f16"}, {"eps", 1e-5}},    // one 512-token passage
      {{"tokens", 16384}, {"hidden", 768}, {"dtype", "f16"}, {"eps", 1e-12}},  // BERT-base / ColBERTv2
  };
  d.architectures = {"xlm_roberta"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("add_layer_norm", cpu, add_layer_norm_cpu);

}  // namespace
}  // namespace fk::ops
