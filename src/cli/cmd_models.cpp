// `fk models list [--json]`: every registered architecture with its category, run pattern,
// presets (what --model takes), backends and the golden test that holds it to upstream.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.h"
#include "fk/status.h"
#include "models/registry.h"

namespace fk::cli {
namespace {

using nlohmann::json;

json registration_json(const models::ModelRegistration& r) {
  json presets = json::array();
  for (const models::Preset& p : r.presets)
    presets.push_back({{"name", p.name}, {"kind", models::preset_kind_name(p.kind)}, {"description", p.description}});
  const models::Category* c = models::find_category(r.category);
  return {{"architecture", r.architecture},
          {"names", r.names},
          {"category", r.category},
          {"category_name", c ? std::string(c->name) : std::string()},
          {"pattern", models::run_pattern_name(r.pattern)},
          {"config_types", r.config_types},
          {"presets", presets},
          {"backends", r.backends},
          {"golden_test", r.golden_test}};
}

std::string joined(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

void list_models(bool as_json) {
  const auto regs = models::model_registrations();
  if (as_json) {
    json out = json::array();
    for (const auto* r : regs) out.push_back(registration_json(*r));
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::string category;
  for (const auto* r : regs) {
    if (r->category != category) {
      category = r->category;
      const models::Category* c = models::find_category(category);
      std::printf("%s%s (%s)\n", category == regs.front()->category ? "" : "\n",
                  c ? std::string(c->name).c_str() : "?", category.c_str());
    }
    std::vector<std::string> presets;
    for (const models::Preset& p : r->presets)
      presets.push_back(concat(p.name, p.kind == models::PresetKind::tiny ? " (tiny)" : ""));
    std::printf("  %-10s %-18s %-9s %-9s %s\n", r->architecture.c_str(), joined(r->names).c_str(),
                std::string(models::run_pattern_name(r->pattern)).c_str(), joined(r->backends, ",").c_str(),
                joined(presets).c_str());
  }
  std::printf("\n%zu architectures. `fk run --model PRESET` runs one; --json adds descriptions and golden tests.\n",
              regs.size());
}

void setup(CLI::App& app) {
  auto* models_cmd = app.add_subcommand("models", "The registered architectures and their presets");
  models_cmd->require_subcommand(1);
  static bool as_json = false;
  auto* list = models_cmd->add_subcommand(
      "list", "Every registered architecture: category, run pattern, presets (production, tiny), backends");
  list->add_flag("--json", as_json, "JSON: a list of {architecture, names, category, pattern, presets, backends, "
                                    "golden_test, ...}");
  list->callback([] { list_models(as_json); });
  // The preset's config text, as the upstream library reads it: what a side-by-side run in
  // that library (transformers, diffusers, timm) builds the same model from.
  static std::string preset;
  auto* config = models_cmd->add_subcommand("config", "Print a preset's config (the upstream config.json text)");
  config->add_option("preset", preset, "A preset of `fk models list`")->required();
  config->callback([] {
    const models::ModelSource src = models::resolve_model(preset);
    FK_CHECK(src.preset != nullptr, "models config: '", preset, "' is a folder, not a preset; its config.json is there");
    std::printf("%s\n", src.config_json.c_str());
  });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
