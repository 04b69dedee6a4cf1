// rope_cos_sin_cache: definition (workloads, cost) and CPU reference, in double.
#include <cmath>
#include <vector>

#include "fk/element.h"
#include "fk/ops/rope.h"
#include "ops/rope/rope_validate.h"
#include "ops/rope/rope_workload.h"

namespace fk::ops {
namespace {

constexpr const char* kOp = RopeCosSinCacheArgs::kName;

fk_status rope_cos_sin_cache_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const RopeCosSinCacheArgs*>(args);
    validate_rope_cos_sin_cache(a, RopeImpl::reference);
    const TensorView& out = a.cos_sin_cache;
    const int64_t max_pos = out.shape[0];
    const int rot_dim = static_cast<int>(out.shape[1]);
    const int half = rot_dim / 2;
    const double attn = rope_attention_factor(a.config);
    std::vector<double> inv_freq(half);
    for (int i = 0; i < half; ++i) inv_freq[i] = rope_inv_freq(a.config, rot_dim, i);
    for (int64_t p = 0; p < max_pos; ++p) {
      for (int i = 0; i < half; ++i) {
        const double angle = static_cast<double>(p) * inv_freq[i];
        set(out, std::cos(angle) * attn, p, i);
        set(out, std::sin(angle) * attn, p, half + i);
      }
    }
  });
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "rope";
  d.level = "L1";
  d.summary = "cos/sin cache [max_pos, rot_dim] of RoPE (none/linear/llama3/yarn scaling)";
  d.args_size = sizeof(RopeCosSinCacheArgs);
  d.tensor_args = {{"cos_sin_cache", ArgRole::out, offsetof(RopeCosSinCacheArgs, cos_sin_cache)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t) {
    const int64_t max_pos = wl_int(w, "max_pos"), rot_dim = wl_int(w, "rot_dim");
    FK_CHECK(max_pos >= 0 && rot_dim >= 2, "rope_cos_sin_cache workload needs max_pos >= 0 and rot_dim >= 2, got ",
             w.dump());
    OpCase c = begin_case<RopeCosSinCacheArgs>(w, 1);
    c.tensors[0] = Tensor::empty({max_pos, rot_dim}, wl_dtype(w, "dtype", DType::f32));
    c.as<RopeCosSinCacheArgs>().config = parse_rope_config(w);
    c.bind(layout);
    return c;
  };
  // The output written once; per pair a cos and a sin (counted as one flop each).
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<RopeCosSinCacheArgs>();
    return OpCost{static_cast<double>(a.cos_sin_cache.nbytes()), static_cast<double>(a.cos_sin_cache.numel()),
                  DType::f32};
  };
  const Json llama31 = {{"theta", 500000.0}, {"scaling", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                        {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  const Json qwen3_yarn = {{"theta", 1000000.0}, {"scaling", "yarn"}, {"factor", 4.0},
                           {"original_max_position_embeddings", 32768}};
  auto with = [](Json base, const Json& extra) {
    base.update(extra);
    return base;
  };
  d.test_workloads = {
      {{"max_pos", 1}, {"rot_dim", 2}},
      {{"max_pos", 257}, {"rot_dim", 128}},
      {{"max_pos", 100}, {"rot_dim", 64}, {"theta", 1000000.0}, {"dtype", "bf16"}},
      {{"max_pos", 64}, {"rot_dim", 32}, {"scaling", "linear"}, {"factor", 2.5}, {"dtype", "f16"}},
      with(llama31, {{"max_pos", 300}, {"rot_dim", 128}}),
      with(llama31, {{"max_pos", 32768}, {"rot_dim", 8}}),  // positions up to 32k
      with(qwen3_yarn, {{"max_pos", 200}, {"rot_dim", 128}}),
      // DeepSeek-style YaRN: mscale / mscale_all_dim, untruncated correction range
      {{"max_pos", 96}, {"rot_dim", 64}, {"scaling", "yarn"}, {"factor", 40.0}, {"beta_fast", 32.0}, {"beta_slow", 1.0},
       {"original_max_position_embeddings", 4096}, {"mscale", 1.0}, {"mscale_all_dim", 0.8}, {"truncate", false}},
      {{"max_pos", 50}, {"rot_dim", 48}, {"scaling", "yarn"}, {"factor", 8.0}, {"attention_factor", 1.25},
       {"original_max_position_embeddings", 2048}},
      {{"max_pos", 0}, {"rot_dim", 128}},
  };
  d.bench_workloads = {
      with(llama31, {{"max_pos", 131072}, {"rot_dim", 128}}),                       // Llama-3.1-8B
      with(qwen3_yarn, {{"max_pos", 131072}, {"rot_dim", 128}}),                    // Qwen3-8B, YaRN x4
      {{"max_pos", 32768}, {"rot_dim", 128}, {"theta", 1000000.0}},                 // Mistral-7B v0.3
  };
  // Built at model load, one per rope configuration.
  d.architectures = {"llama",  "mistral", "qwen2",     "qwen3",     "gemma", "gemma2",
                     "gemma3", "mixtral", "qwen3_moe", "qwen2_moe", "olmoe"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("rope_cos_sin_cache", cpu, rope_cos_sin_cache_cpu);

}  // namespace
}  // namespace fk::ops
