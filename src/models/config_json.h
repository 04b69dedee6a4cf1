// Reading a model's config JSON: the parse, with a named error for text that is not a JSON
// object, and optional integer fields, with a named error for a value of another type.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

namespace fk::models {

nlohmann::json parse_config_object(std::string_view config_json, std::string_view source);

// j[key] as an integer; `fallback` where the key is absent or null. `family` names the config
// in the error ("FLUX", "Oasis").
int64_t config_int(const nlohmann::json& j, const char* key, int64_t fallback, std::string_view source,
                   std::string_view family);

}  // namespace fk::models
