#include "models/registry.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "fk/status.h"

namespace fk::models {

namespace {

std::vector<ModelRegistration>& registry() {
  static std::vector<ModelRegistration> r;
  return r;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

size_t category_rank(const std::string& slug) {
  const auto& c = categories();
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i].slug == slug) return i;
  return c.size();
}

std::vector<std::string> preset_names() {
  std::vector<std::string> out;
  for (const ModelRegistration* r : model_registrations())
    for (const Preset& p : r->presets) out.push_back(p.name);
  return out;
}

// The config's type: "model_type" (HF transformers), "_class_name" (diffusers) or
// "architecture" (timm).
std::string config_type(std::string_view config_json, std::string_view source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(config_json);
  } catch (const nlohmann::json::exception& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": not valid JSON (", e.what(), ")");
  }
  FK_CHECK(j.is_object(), source, ": a config must be a JSON object");
  for (const char* key : {"model_type", "_class_name", "architecture"})
    if (j.contains(key) && j[key].is_string()) return j[key].get<std::string>();
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": names no model type ('model_type', diffusers' '_class_name' or timm's "
          "'architecture')");
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  FK_CHECK(f.good(), "cannot read ", path.string());
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

const std::vector<Category>& categories() {
  static const std::vector<Category> kCategories = {
      {"dense-moe-llm", "Dense & MoE LLMs"},
      {"linear-attention-ssm", "Linear attention & state space"},
      {"vision-video-audio", "Vision / video / audio"},
      {"multimodal-encoders", "Multimodal & encoders"},
      {"edge-detection", "Edge & detection"},
      {"3d-robotics-science", "3D / robotics / science"},
      {"recommendation-specialised", "Recommendation & specialised"},
      {"world-models", "World models"},
  };
  return kCategories;
}

const Category* find_category(std::string_view slug) {
  for (const Category& c : categories())
    if (c.slug == slug) return &c;
  return nullptr;
}

std::string_view preset_kind_name(PresetKind kind) { return kind == PresetKind::production ? "production" : "tiny"; }

ModelRegistrar::ModelRegistrar(ModelRegistration registration) { registry().push_back(std::move(registration)); }

std::vector<const ModelRegistration*> model_registrations() {
  std::vector<const ModelRegistration*> out;
  for (const ModelRegistration& r : registry()) out.push_back(&r);
  std::sort(out.begin(), out.end(), [](const ModelRegistration* a, const ModelRegistration* b) {
    const size_t ca = category_rank(a->category), cb = category_rank(b->category);
    return ca != cb ? ca < cb : a->architecture < b->architecture;
  });
  return out;
}

const ModelRegistration& registration(std::string_view architecture) {
  std::vector<std::string> known;
  for (const ModelRegistration* r : model_registrations()) {
    if (r->architecture == architecture) return *r;
    known.push_back(r->architecture);
  }
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, "no registered architecture '", architecture, "' (registered: ", join(known),
          "; see `fk models list`)");
}

std::vector<std::string> registration_problems() {
  std::vector<std::string> problems;
  std::set<std::string> architectures, presets, config_types;
  for (const ModelRegistration* r : model_registrations()) {
    const std::string who = concat("architecture '", r->architecture, "'");
    if (r->architecture.empty()) problems.push_back("a registration has no architecture name");
    if (!architectures.insert(r->architecture).second) problems.push_back(who + " is registered twice");
    if (r->names.empty()) problems.push_back(who + " names no benchmark architecture");
    if (!find_category(r->category)) problems.push_back(concat(who, ": unknown category '", r->category, "'"));
    if (!r->factory) problems.push_back(who + " has no factory");
    if (r->golden_test.empty()) problems.push_back(who + " names no golden test");
    if (r->config_types.empty()) problems.push_back(who + " parses no config type");
    for (const std::string& t : r->config_types)
      if (!config_types.insert(t).second) problems.push_back(concat(who, ": config type '", t, "' is claimed twice"));
    for (const std::string& b : r->backends)
      if (b != "cpu" && b != "cuda") problems.push_back(concat(who, ": unknown backend '", b, "'"));
    bool production = false, tiny = false;
    for (const Preset& p : r->presets) {
      if (!presets.insert(lower(p.name)).second) problems.push_back(concat(who, ": preset '", p.name, "' is taken"));
      if (p.config_json.empty()) problems.push_back(concat(who, ": preset '", p.name, "' has no config"));
      production |= p.kind == PresetKind::production;
      tiny |= p.kind == PresetKind::tiny;
    }
    if (!production) problems.push_back(who + " has no production preset");
    if (!tiny) problems.push_back(who + " has no tiny preset");
  }
  return problems;
}

const ModelRegistration& registration_for_config(std::string_view config_json, std::string_view source) {
  const std::string type = config_type(config_json, source);
  std::vector<std::string> known;
  for (const ModelRegistration* r : model_registrations()) {
    for (const std::string& t : r->config_types)
      if (t == type) return *r;
    known.insert(known.end(), r->config_types.begin(), r->config_types.end());
  }
  FK_FAIL(FK_ERR_UNSUPPORTED, source, ": model type '", type, "' is not a registered architecture (registered types: ",
          join(known), "; see `fk models list`)");
}

ModelSource resolve_model(std::string_view model) {
  namespace fs = std::filesystem;
  FK_CHECK(!model.empty(), "no model given (a preset of `fk models list`, or a checkpoint folder)");
  std::error_code ec;
  const fs::path path(model);
  if (fs::is_directory(path, ec)) {
    FK_CHECK(fs::exists(path / "config.json", ec), "model folder '", path.string(), "' holds no config.json");
    ModelSource s;
    s.config_json = read_text(path / "config.json");
    s.source = (path / "config.json").string();
    s.registration = &registration_for_config(s.config_json, s.source);
    s.checkpoint = path;
    return s;
  }
  const std::string key = lower(model);
  for (const ModelRegistration* r : model_registrations())
    for (const Preset& p : r->presets)
      if (lower(p.name) == key) return {r, &p, std::string(p.config_json), p.name, {}};
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, "unknown model '", model, "': neither a registered preset nor a folder with a "
          "config.json (presets: ", join(preset_names()), "; see `fk models list`)");
}

void check_runnable(const ModelSource& model, RunPattern runnable, std::string_view backend,
                    std::string_view command) {
  const ModelRegistration& r = *model.registration;
  if (r.pattern != runnable)
    FK_FAIL(FK_ERR_UNSUPPORTED, command, ": model '", model.source, "' (architecture '", r.architecture,
            "') runs by the ", run_pattern_name(r.pattern), " pattern, which has no runner in `", command,
            "` yet (it runs ", run_pattern_name(runnable), " models)");
  if (std::find(r.backends.begin(), r.backends.end(), backend) == r.backends.end())
    FK_FAIL(FK_ERR_UNSUPPORTED, command, ": architecture '", r.architecture, "' has no ", backend,
            " backend (it has: ", join(r.backends), ")");
}

std::unique_ptr<Model> create_model_from_config(std::string_view config_json, std::string_view source) {
  return registration_for_config(config_json, source).factory(config_json, source);
}

std::unique_ptr<Model> create_model(std::string_view model) {
  const ModelSource s = resolve_model(model);
  return s.registration->factory(s.config_json, s.source);
}

std::string category_of(std::string_view model) { return create_model(model)->task_category(); }

std::string category_of_config(std::string_view config_json, std::string_view source) {
  return create_model_from_config(config_json, source)->task_category();
}

}  // namespace fk::models
