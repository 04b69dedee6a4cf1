// The model registry: every registration is complete and valid, presets and configs find
// their architecture, and unknown names are refused with the known ones listed.
#include "models/registry.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <set>
#include <string>

#include "fk/status.h"
#include "models/llm/model_config.h"

namespace fk::models {
namespace {

std::string data_dir(const std::string& family) { return std::string(FK_SOURCE_DIR) + "/tests/data/models/" + family; }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelRegistry, RegistrationsAreComplete) {
  const std::vector<std::string> problems = registration_problems();
  for (const std::string& p : problems) ADD_FAILURE() << p;
  ASSERT_FALSE(model_registrations().empty());
}

TEST(ModelRegistry, EveryPresetMakesItsArchitecture) {
  for (const ModelRegistration* r : model_registrations()) {
    SCOPED_TRACE(r->architecture);
    EXPECT_NE(find_category(r->category), nullptr);
    EXPECT_EQ(run_pattern_from_name(run_pattern_name(r->pattern)), r->pattern);
    int tiny = 0, production = 0;
    for (const Preset& p : r->presets) {
      SCOPED_TRACE(p.name);
      const std::unique_ptr<Model> m = create_model(p.name);
      EXPECT_EQ(m->architecture(), r->architecture);
      EXPECT_EQ(m->pattern(), r->pattern);
      EXPECT_FALSE(m->weights().empty());
      EXPECT_FALSE(m->inputs().empty());
      EXPECT_FALSE(m->outputs().empty());
      EXPECT_FALSE(m->loaded());
      (p.kind == PresetKind::tiny ? tiny : production) += 1;
    }
    EXPECT_GE(tiny, 1);
    EXPECT_GE(production, 1);
  }
}

TEST(ModelRegistry, NamesAreUnique) {
  std::set<std::string> architectures, names, presets;
  for (const ModelRegistration* r : model_registrations()) {
    EXPECT_TRUE(architectures.insert(r->architecture).second) << r->architecture;
    for (const std::string& n : r->names) EXPECT_TRUE(names.insert(n).second) << n;
    for (const Preset& p : r->presets) EXPECT_TRUE(presets.insert(p.name).second) << p.name;
  }
}

TEST(ModelRegistry, BenchmarkArchitecturesAreRegistered) {
  std::set<std::string> names;
  for (const ModelRegistration* r : model_registrations()) names.insert(r->names.begin(), r->names.end());
  EXPECT_TRUE(names.count("Llama-3.1-8B"));
  EXPECT_TRUE(names.count("Mixtral-8x7B"));
  EXPECT_EQ(resolve_model("llama-3.1-8b").registration->architecture, "llama");
  EXPECT_EQ(resolve_model("mixtral-8x7b").preset->kind, PresetKind::production);
}

// The engine takes built-in config names: each is one registration's preset.
TEST(ModelRegistry, EveryBuiltinConfigIsAPreset) {
  for (const std::string& name : model_config_names()) {
    const ModelSource s = resolve_model(name);
    ASSERT_NE(s.preset, nullptr) << name;
    EXPECT_EQ(s.config_json, model_config_json_by_name(name)) << name;
    EXPECT_TRUE(s.checkpoint.empty());
  }
}

TEST(ModelRegistry, LookupByPresetAndByConfig) {
  const ModelSource tiny = resolve_model("Tiny-Qwen3-MoE");  // case-insensitive
  EXPECT_EQ(tiny.registration->architecture, "qwen3_moe");
  EXPECT_EQ(tiny.preset->name, "tiny-qwen3-moe");

  const ModelSource folder = resolve_model(data_dir("mixtral"));
  EXPECT_EQ(folder.registration->architecture, "mixtral");
  EXPECT_EQ(folder.preset, nullptr);
  EXPECT_EQ(folder.checkpoint, std::filesystem::path(data_dir("mixtral")));

  EXPECT_EQ(registration_for_config(model_config_json_by_name("tiny-gemma3")).architecture, "gemma3");
  // The multimodal wrapper's config names the same architecture.
  EXPECT_EQ(registration_for_config(R"({"model_type": "gemma3", "text_config": {}})").architecture, "gemma3");
  EXPECT_EQ(create_model(data_dir("olmoe"))->architecture(), "olmoe");
  EXPECT_EQ(registration("llama").presets.size(), 2u);
}

TEST(ModelRegistry, TaskCategoryComesFromTheModel) {
  EXPECT_EQ(category_of("tiny-llama"), "dense-llm");
  EXPECT_EQ(category_of("tiny-mixtral"), "moe-llm");
  EXPECT_EQ(category_of(data_dir("qwen2_moe")), "moe-llm");
  EXPECT_EQ(category_of_config(model_config_json_by_name("gemma-2-9b")), "dense-llm");
}

TEST(ModelRegistry, UnknownNamesListTheKnownOnes) {
  const std::string e = error_of([] { resolve_model("llama-9000"); });
  EXPECT_NE(e.find("unknown model 'llama-9000'"), std::string::npos) << e;
  EXPECT_NE(e.find("tiny-llama"), std::string::npos) << e;
  EXPECT_NE(e.find("mixtral-8x7b"), std::string::npos) << e;
  EXPECT_NE(e.find("fk models list"), std::string::npos) << e;

  const std::string a = error_of([] { registration("mamba9"); });
  EXPECT_NE(a.find("'mamba9'"), std::string::npos) << a;
  EXPECT_NE(a.find("llama"), std::string::npos) << a;

  const std::string t = error_of([] { registration_for_config(R"({"model_type": "t5"})", "x/config.json"); });
  EXPECT_NE(t.find("x/config.json: model type 't5'"), std::string::npos) << t;
  EXPECT_NE(t.find("qwen3_moe"), std::string::npos) << t;

  EXPECT_NE(error_of([] { registration_for_config(R"({"hidden_size": 8})"); }).find("names no model type"),
            std::string::npos);
  EXPECT_NE(error_of([] { registration_for_config("{"); }).find("not valid JSON"), std::string::npos);
}

// Commands run the patterns they have runners for, on the registration's backends.
TEST(ModelRegistry, CommandsRefusePatternsAndBackendsTheyLack) {
  const ModelSource llama = resolve_model("tiny-llama");
  check_runnable(llama, RunPattern::generate, "cpu", "fk run");
  EXPECT_NE(error_of([&] { check_runnable(llama, RunPattern::batch, "cpu", "fk run"); })
                .find("fk run: model 'tiny-llama' (architecture 'llama') runs by the generate pattern, which has no "
                      "runner in `fk run` yet"),
            std::string::npos);
  ModelRegistration denoiser = *llama.registration;  // the same entry, as a Denoise model on CUDA only
  denoiser.pattern = RunPattern::denoise;
  denoiser.backends = {"cuda"};
  ModelSource s = llama;
  s.registration = &denoiser;
  EXPECT_NE(error_of([&] { check_runnable(s, RunPattern::generate, "cuda", "fk bench latency"); })
                .find("runs by the denoise pattern"),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_runnable(s, RunPattern::denoise, "cpu", "fk run"); })
                .find("architecture 'llama' has no cpu backend (it has: cuda)"),
            std::string::npos);
}

// Each golden test named by a registration has its upstream outputs committed.
TEST(ModelRegistry, GoldenTestsHaveTheirData) {
  for (const ModelRegistration* r : model_registrations()) {
    const std::string& g = r->golden_test;
    // A parameterised golden test names its family after the last '/'; the others keep
    // their data under the architecture's name.
    const size_t slash = g.rfind('/');
    const std::string family = slash == std::string::npos ? r->architecture : g.substr(slash + 1);
    // Decoder families keep their data in tests/data/models/<family>, encoders in encoders/<family>,
    // recommendation models in recsys/<family>, vision models in vision/<family>.
    std::string dir = data_dir(family);
    if (!std::filesystem::exists(dir)) dir = data_dir("encoders/" + family);
    if (!std::filesystem::exists(dir)) dir = data_dir("recsys/" + family);
    if (!std::filesystem::exists(dir)) dir = data_dir("vision/" + family);
    EXPECT_TRUE(std::filesystem::exists(dir + "/golden.json") || std::filesystem::exists(dir + "/golden.safetensors"))
        << r->architecture << ": " << g;
    if (!std::filesystem::exists(dir)) continue;  // reported above; the other registrations are still checked
    // The golden checkpoint's config is of this architecture (a diffusers pipeline keeps the
    // model's in its transformer/ folder).
    const std::string model_dir = std::filesystem::exists(dir + "/config.json") ? dir : dir + "/transformer";
    // The vision tower's goldens come from a whole Qwen3-VL checkpoint (architecture qwen3_vl).
    const std::string owner = r->architecture == "qwen3_vl_vision" ? "qwen3_vl" : r->architecture;
    EXPECT_EQ(resolve_model(model_dir).registration->architecture, owner) << g;
  }
}

}  // namespace
}  // namespace fk::models
