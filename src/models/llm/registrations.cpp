// The decoder LLMs in the model registry: one registration per config model_type family,
// each with the published config of a released model (run with dummy weights) and a tiny
// config (2 layers, hidden 64) that keeps the family's distinctive features. Their presets
// are the built-in configs (model_config_builtin.cpp), so the engine takes the same names.
// Golden tests: transformers' outputs of random tiny checkpoints (tests/data/models/<family>/).
#include <string>

#include "models/llm/decoder_llm.h"
#include "models/llm/model_config.h"
#include "models/registry.h"

namespace fk::engine {
namespace {

using models::ModelFactory;
using models::ModelRegistration;
using models::Preset;
using models::PresetKind;

Preset preset(const char* name, PresetKind kind, const char* description) {
  return {name, kind, description, model_config_json_by_name(name)};
}

ModelRegistration decoder_llm(const char* architecture, std::vector<std::string> names,
                              std::vector<std::string> config_types, std::vector<Preset> presets,
                              const char* golden_family, ModelFactory factory) {
  ModelRegistration r;
  r.architecture = architecture;
  r.names = std::move(names);
  r.category = "dense-moe-llm";
  r.pattern = models::RunPattern::generate;
  r.config_types = std::move(config_types);
  r.presets = std::move(presets);
  r.backends = {"cpu", "cuda"};
  r.golden_test = std::string("Families/GoldenCpu.LogitsAndGreedyTokensMatchTransformers/") + golden_family;
  r.factory = factory;
  return r;
}

constexpr PresetKind kProduction = PresetKind::production;
constexpr PresetKind kTiny = PresetKind::tiny;

#define FK_DECODER_FACTORY(ARCH) \
  [](std::string_view json, std::string_view source) { return DecoderLlm::from_config(ARCH, json, source); }

const models::ModelRegistrar kLlama(decoder_llm(
    "llama", {"Llama-3.1-8B"}, {"llama"},
    {preset("llama-3.1-8b", kProduction, "Llama 3.1 8B: 32 layers, GQA 32/8, llama3 rope scaling"),
     preset("tiny-llama", kTiny, "2 layers of 64, GQA 4/2, llama3 rope scaling")},
    "llama", FK_DECODER_FACTORY("llama")));

const models::ModelRegistrar kMistral(decoder_llm(
    "mistral", {"Mistral-7B-v0.3"}, {"mistral"},
    {preset("mistral-7b-v0.3", kProduction, "Mistral 7B v0.3: 32 layers, GQA 32/8"),
     preset("tiny-mistral", kTiny, "2 layers of 64, sliding window 32")},
    "mistral", FK_DECODER_FACTORY("mistral")));

const models::ModelRegistrar kQwen2(decoder_llm(
    "qwen2", {"Qwen2.5-7B"}, {"qwen2"},
    {preset("qwen2.5-7b", kProduction, "Qwen2.5 7B: 28 layers, GQA 28/4, q/k/v biases"),
     preset("tiny-qwen2", kTiny, "2 layers of 64, q/k/v biases, tied embeddings")},
    "qwen2", FK_DECODER_FACTORY("qwen2")));

const models::ModelRegistrar kQwen3(decoder_llm(
    "qwen3", {"Qwen3-8B"}, {"qwen3"},
    {preset("qwen3-8b", kProduction, "Qwen3 8B: 36 layers, GQA 32/8, per-head q/k norms"),
     preset("tiny-qwen3", kTiny, "2 layers of 64, per-head q/k norms")},
    "qwen3", FK_DECODER_FACTORY("qwen3")));

const models::ModelRegistrar kGemma(decoder_llm(
    "gemma", {"Gemma-7B"}, {"gemma"},
    {preset("gemma-7b", kProduction, "Gemma 7B: 28 layers, 16 heads of 256, tanh-gelu MLP"),
     preset("tiny-gemma", kTiny, "2 layers of 64, (1 + w) norms, scaled embeddings")},
    "gemma", FK_DECODER_FACTORY("gemma")));

const models::ModelRegistrar kGemma2(decoder_llm(
    "gemma2", {"Gemma-2-9B"}, {"gemma2"},
    {preset("gemma-2-9b", kProduction, "Gemma 2 9B: 42 layers alternating sliding 4096 and full, soft-capping"),
     preset("tiny-gemma2", kTiny, "2 layers of 64, sandwich norms, sliding window 32, soft-capping")},
    "gemma2", FK_DECODER_FACTORY("gemma2")));

// gemma3: the multimodal wrapper's config, whose text model (gemma3_text) is what runs.
const models::ModelRegistrar kGemma3(decoder_llm(
    "gemma3", {"Gemma-3-1B"}, {"gemma3_text", "gemma3"},
    {preset("gemma-3-1b", kProduction, "Gemma 3 1B: 26 layers, 5 sliding (512) per full one, q/k norms"),
     preset("tiny-gemma3", kTiny, "2 layers of 64, one sliding and one full, local rope base, linear rope scaling")},
    "gemma3", FK_DECODER_FACTORY("gemma3")));

const models::ModelRegistrar kMixtral(decoder_llm(
    "mixtral", {"Mixtral-8x7B"}, {"mixtral"},
    {preset("mixtral-8x7b", kProduction, "Mixtral 8x7B: 32 layers, 8 experts, top-2"),
     preset("tiny-mixtral", kTiny, "2 layers of 64, 4 experts, top-2")},
    "mixtral", FK_DECODER_FACTORY("mixtral")));

const models::ModelRegistrar kQwen3Moe(decoder_llm(
    "qwen3_moe", {"Qwen3-30B-A3B"}, {"qwen3_moe"},
    {preset("qwen3-30b-a3b", kProduction, "Qwen3 30B-A3B: 48 layers, 128 experts, top-8"),
     preset("tiny-qwen3-moe", kTiny, "2 layers of 64, 4 experts, top-2, q/k norms")},
    "qwen3_moe", FK_DECODER_FACTORY("qwen3_moe")));

const models::ModelRegistrar kQwen2Moe(decoder_llm(
    "qwen2_moe", {"Qwen1.5-MoE-A2.7B"}, {"qwen2_moe"},
    {preset("qwen1.5-moe-a2.7b", kProduction, "Qwen1.5-MoE-A2.7B: 24 layers, 60 experts, top-4, a shared expert"),
     preset("tiny-qwen2-moe", kTiny, "2 layers of 64 (one sparse, one dense), 4 experts, a shared expert")},
    "qwen2_moe", FK_DECODER_FACTORY("qwen2_moe")));

const models::ModelRegistrar kOlmoe(decoder_llm(
    "olmoe", {"OLMoE-1B-7B"}, {"olmoe"},
    {preset("olmoe-1b-7b", kProduction, "OLMoE 1B-7B: 16 layers, 64 experts, top-8, q/k norms across heads"),
     preset("tiny-olmoe", kTiny, "2 layers of 64, 4 experts, top-2, q/k norms across heads")},
    "olmoe", FK_DECODER_FACTORY("olmoe")));

// Qwen3-Next: the first architecture of the linear attention & state space category (its
// gated DeltaNet layers keep per-sequence recurrent state beside the attention layers' KV).
const models::ModelRegistrar kQwen3Next([] {
  ModelRegistration r = decoder_llm(
      "qwen3_next", {"Qwen3-Next-80B-A3B"}, {"qwen3_next"},
      {preset("qwen3-next-80b-a3b", kProduction,
              "Qwen3-Next 80B-A3B: 48 layers, 3 gated DeltaNet per gated attention layer, 512 experts top-10 + shared"),
       preset("qwen3-next-80b-a3b-12l", kProduction,
              "Qwen3-Next 80B-A3B's width with 12 of its layers (9 gated DeltaNet, 3 gated attention): one GPU"),
       preset("tiny-qwen3-next", kTiny, "4 layers of 64 (3 gated DeltaNet, 1 gated attention), 4 experts, a shared expert")},
      "qwen3_next", FK_DECODER_FACTORY("qwen3_next"));
  r.category = "linear-attention-ssm";
  r.golden_test = "Qwen3NextGolden.LogitsMatchTransformers";
  return r;
}());

// gpt-oss: attention sinks, alternating sliding (128) / full layers, YaRN, biased experts
// with a clamped SwiGLU. Its released experts are MXFP4 (dequantized to bf16 at load); the
// presets run dummy bf16 weights.
const models::ModelRegistrar kGptOss([] {
  ModelRegistration r = decoder_llm(
      "gpt_oss", {"gpt-oss-120b"}, {"gpt_oss"},
      {preset("gpt-oss-120b", kProduction,
              "gpt-oss-120b: 36 layers alternating sliding 128 / full, 64/8 heads of 64 with sinks, 128 experts top-4"),
       preset("gpt-oss-20b", kProduction, "gpt-oss-20b: 24 layers, 32 experts top-4 (fits one GPU in bf16)"),
       preset("gpt-oss-120b-8l", kProduction, "gpt-oss-120b's width with 8 of its 36 layers: one 80 GB GPU in bf16"),
       preset("tiny-gpt-oss", kTiny, "2 layers of 64 (sliding 8, full), sinks, YaRN, 4 experts top-2 with biases")},
      "gpt_oss", FK_DECODER_FACTORY("gpt_oss"));
  r.golden_test = "GptOssGolden.LogitsMatchTransformers";
  return r;
}());

#undef FK_DECODER_FACTORY

}  // namespace
}  // namespace fk::engine
