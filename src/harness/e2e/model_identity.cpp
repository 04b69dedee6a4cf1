#include "harness/e2e/model_identity.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "fk/status.h"
#include "models/registry.h"

namespace fk::e2e {

namespace fs = std::filesystem;

std::string model_category(const ModelConfig& config) {
  return models::category_of_config(model_config_to_json(config), concat("model_type '", config.model_type, "'"));
}

std::string model_category(const std::string& model) { return models::category_of(model); }

std::string model_id(const std::string& model) {
  std::error_code ec;
  if (fs::is_directory(model, ec)) {
    const fs::path p = fs::weakly_canonical(fs::absolute(model), ec);
    return ec ? fs::absolute(model).lexically_normal().string() : p.string();
  }
  std::string id = model;
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return id;
}

}  // namespace fk::e2e
