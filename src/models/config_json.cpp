#include "models/config_json.h"

#include "fk/status.h"

namespace fk::models {

nlohmann::json parse_config_object(std::string_view config_json, std::string_view source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(config_json);
  } catch (const nlohmann::json::exception& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": not valid JSON: ", e.what());
  }
  FK_CHECK(j.is_object(), source, ": a config must be a JSON object");
  return j;
}

int64_t config_int(const nlohmann::json& j, const char* key, int64_t fallback, std::string_view source,
                   std::string_view family) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  FK_CHECK(j[key].is_number_integer(), source, ": ", family, " config '", key, "' must be an integer, got ",
           j[key].dump());
  return j[key].get<int64_t>();
}

}  // namespace fk::models
