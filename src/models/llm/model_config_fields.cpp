#include "models/llm/model_config_fields.h"

#include <limits>

#include "core/safetensors/strict_json.h"
#include "fk/status.h"

namespace fk::model_config_detail {

using nlohmann::json;

const json* ConfigFields::find(std::string_view key) const {
  if (auto it = config_.find(key); it != config_.end()) return &*it;
  if (auto it = defaults_.find(key); it != defaults_.end()) return &*it;
  return nullptr;
}

void ConfigFields::fail(const std::string& message) const {
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, source_, ": ", message);
}

void ConfigFields::wrong_type(std::string_view key, const char* expected, const json& v) const {
  std::string shown = v.dump();
  if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
  fail(concat("'", key, "' must be ", expected, ", got ", safetensors::json_type_name(v), " ", shown));
}

const json& ConfigFields::required(std::string_view key) const {
  const json* v = find(key);
  if (!v) fail(concat("missing required field '", key, "' (", family_, ")"));
  if (v->is_null()) fail(concat("'", key, "' is null but required (", family_, ")"));
  return *v;
}

int64_t ConfigFields::as_integer(std::string_view key, const json& v) const {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(concat("'", key, "' is too large: ", v.dump()));
    return static_cast<int64_t>(v.get<uint64_t>());
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  wrong_type(key, "an integer", v);
}

double ConfigFields::as_number(std::string_view key, const json& v) const {
  if (!v.is_number()) wrong_type(key, "a number", v);
  return v.get<double>();
}

int64_t ConfigFields::integer(std::string_view key) const { return as_integer(key, required(key)); }
double ConfigFields::number(std::string_view key) const { return as_number(key, required(key)); }

bool ConfigFields::boolean(std::string_view key) const {
  const json& v = required(key);
  if (!v.is_boolean()) wrong_type(key, "true or false", v);
  return v.get<bool>();
}

std::string ConfigFields::string(std::string_view key) const {
  const json& v = required(key);
  if (!v.is_string()) wrong_type(key, "a string", v);
  return v.get<std::string>();
}

std::optional<int64_t> ConfigFields::optional_integer(std::string_view key) const {
  const json* v = find(key);
  if (!v || v->is_null()) return std::nullopt;
  return as_integer(key, *v);
}

std::optional<double> ConfigFields::optional_number(std::string_view key) const {
  const json* v = find(key);
  if (!v || v->is_null()) return std::nullopt;
  return as_number(key, *v);
}

std::optional<std::string> ConfigFields::optional_string(std::string_view key) const {
  const json* v = find(key);
  if (!v || v->is_null()) return std::nullopt;
  if (!v->is_string()) wrong_type(key, "a string", *v);
  return v->get<std::string>();
}

std::vector<int64_t> ConfigFields::integer_list(std::string_view key) const {
  const json* v = find(key);
  if (!v || v->is_null()) return {};
  if (!v->is_array()) return {as_integer(key, *v)};
  std::vector<int64_t> out;
  for (const json& e : *v) {
    if (!e.is_number_integer()) wrong_type(key, "an integer or a list of integers", *v);
    out.push_back(as_integer(key, e));
  }
  return out;
}

void ConfigFields::require_positive(std::string_view key, int64_t value) const {
  if (value <= 0) fail(concat("'", key, "' must be positive, got ", value));
}

void ConfigFields::require_positive(std::string_view key, double value) const {
  if (!(value > 0)) fail(concat("'", key, "' must be positive, got ", value));
}

}  // namespace fk::model_config_detail
