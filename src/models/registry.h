// The registry of architectures: what `fk models list` shows and what --model looks up.
// Each architecture registers itself from its own folder (a static ModelRegistrar, as ops
// do with FK_REGISTER_OP): its name, the benchmark architectures it covers, its category
// and run pattern, its presets (the production config with dummy weights, a tiny config for
// CPU tests and goldens), its backends, the test that holds it to the upstream library, and
// the factory that makes a Model from config text.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/model.h"

namespace fk::models {

// DESIGN.md's eight categories, in its order.
struct Category {
  std::string_view slug;  // "dense-moe-llm"
  std::string_view name;  // "Dense & MoE LLMs"
};
const std::vector<Category>& categories();
const Category* find_category(std::string_view slug);

enum class PresetKind : uint8_t {
  production,  // a released model's config, run with dummy weights (benchmarks, capture)
  tiny         // a few layers of 64 wide: CPU tests and goldens
};
std::string_view preset_kind_name(PresetKind kind);

struct Preset {
  std::string name;  // what --model takes ("llama-3.1-8b"); matched case-insensitively
  PresetKind kind = PresetKind::tiny;
  std::string description;
  std::string_view config_json;  // the config text (static storage)
};

using ModelFactory = std::unique_ptr<Model> (*)(std::string_view config_json, std::string_view source);

struct ModelRegistration {
  std::string architecture;         // "llama"
  std::vector<std::string> names;   // the benchmark's architectures it covers ("Llama-3.1-8B")
  std::string category;             // a categories() slug
  RunPattern pattern = RunPattern::generate;
  // The config types it parses: config.json's "model_type" (diffusers: "_class_name", timm:
  // "architecture").
  std::vector<std::string> config_types;
  std::vector<Preset> presets;
  std::vector<std::string> backends;  // "cpu", "cuda"
  // The ctest name of the test that matches it against the upstream library's outputs.
  std::string golden_test;
  ModelFactory factory = nullptr;
};

struct ModelRegistrar {
  explicit ModelRegistrar(ModelRegistration registration);
};

// Every registration, by category (DESIGN.md's order), then architecture.
std::vector<const ModelRegistration*> model_registrations();
// Throws naming the architecture and listing the registered ones.
const ModelRegistration& registration(std::string_view architecture);
// What is wrong with the registrations (duplicate names, unknown categories, missing
// presets or factories); empty when all is well.
std::vector<std::string> registration_problems();

// What a --model value names: a preset, or a folder holding a config and its checkpoint.
struct ModelSource {
  const ModelRegistration* registration = nullptr;
  const Preset* preset = nullptr;  // null for a folder
  std::string config_json;
  std::string source;                  // for messages: the preset name or the config's path
  std::filesystem::path checkpoint;    // the folder; empty for a preset
};
// Throws naming the model and pointing to `fk models list` when it is neither a preset
// nor a folder with a config of a registered type.
ModelSource resolve_model(std::string_view model);
// Throws a named error unless `command` can run the model: its pattern is `runnable` (the
// one pattern that command has a runner for) and `backend` ("cpu", "cuda") is one of its
// registration's backends.
void check_runnable(const ModelSource& model, RunPattern runnable, std::string_view backend,
                    std::string_view command);
// The registration whose config_types hold the config's type (throws naming the type and
// the registered ones).
const ModelRegistration& registration_for_config(std::string_view config_json, std::string_view source = "config.json");
// The Model of a --model value or of config text (not loaded).
std::unique_ptr<Model> create_model(std::string_view model);
std::unique_ptr<Model> create_model_from_config(std::string_view config_json, std::string_view source = "config.json");

// The category tasks and results of a model are filed under (Model::task_category):
// what capture and end-to-end runs group by.
std::string category_of(std::string_view model);
std::string category_of_config(std::string_view config_json, std::string_view source = "config.json");

}  // namespace fk::models
