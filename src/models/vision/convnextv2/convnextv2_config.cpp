#include "models/vision/convnextv2/convnextv2_config.h"

#include <nlohmann/json.hpp>
#include <string>

#include "fk/status.h"

namespace fk::models::vision {
namespace {

using nlohmann::json;

std::vector<int64_t> convnextv2_list(const json& j, const char* key, std::string_view source) {
  FK_CHECK(j.contains(key) && j[key].is_array() && !j[key].empty(), source, ": a ConvNeXt V2 config needs '", key,
           "' (a list of positive integers)");
  std::vector<int64_t> out;
  for (const json& v : j[key]) {
    FK_CHECK(v.is_number_integer() && v.get<int64_t>() >= 1, source, ": '", key, "' must hold positive integers, got ",
             j[key].dump());
    out.push_back(v.get<int64_t>());
  }
  return out;
}

int64_t convnextv2_integer(const json& j, const char* key, int64_t fallback, std::string_view source) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  FK_CHECK(j[key].is_number_integer(), source, ": '", key, "' must be an integer, got ", j[key].dump());
  return j[key].get<int64_t>();
}

}  // namespace

int64_t ConvNextV2Config::stage_size(int64_t i) const {
  int64_t s = image_size / patch_size;
  for (int64_t k = 1; k <= i; ++k) s /= 2;
  return s;
}

ConvNextV2Config parse_convnextv2_config(std::string_view config_json, std::string_view source) {
  json j;
  try {
    j = json::parse(config_json);
  } catch (const json::exception& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": not valid JSON: ", e.what());
  }
  FK_CHECK(j.is_object(), source, ": a config must be a JSON object");
  const std::string type = j.value("model_type", std::string());
  FK_CHECK(type == "convnextv2", source, ": model_type must be 'convnextv2', got '", type, "'");
  ConvNextV2Config c;
  c.depths = convnextv2_list(j, "depths", source);
  c.hidden_sizes = convnextv2_list(j, "hidden_sizes", source);
  FK_CHECK(c.depths.size() == c.hidden_sizes.size(), source,
           ": depths and hidden_sizes must have one entry per stage, ", "got ", c.depths.size(), " and ",
           c.hidden_sizes.size());
  c.num_channels = convnextv2_integer(j, "num_channels", 3, source);
  FK_CHECK(c.num_channels == 3, source, ": the engine reads RGB images: num_channels must be 3, got ", c.num_channels);
  c.patch_size = convnextv2_integer(j, "patch_size", 4, source);
  c.image_size = convnextv2_integer(j, "image_size", 224, source);
  const std::string act = j.value("hidden_act", std::string("gelu"));
  FK_CHECK(act == "gelu", source, ": hidden_act '", act, "' is not supported (gelu)");
  if (j.contains("layer_norm_eps")) {
    FK_CHECK(j["layer_norm_eps"].is_number() && j["layer_norm_eps"].get<double>() > 0, source,
             ": layer_norm_eps must be a positive number, got ", j["layer_norm_eps"].dump());
    c.layer_norm_eps = j["layer_norm_eps"].get<double>();
  }
  // transformers writes the labels (id2label); num_labels is its count.
  if (j.contains("id2label") && j["id2label"].is_object() && !j["id2label"].empty())
    c.num_classes = static_cast<int64_t>(j["id2label"].size());
  c.num_classes = convnextv2_integer(j, "num_labels", c.num_classes, source);
  FK_CHECK(c.num_classes >= 1 && c.num_classes <= 100000, source, ": num_labels must lie in [1, 100000], got ",
           c.num_classes);
  FK_CHECK(c.patch_size >= 1 && c.patch_size <= 16, source, ": patch_size must lie in [1, 16], got ", c.patch_size);
  const int64_t divisor = c.patch_size << (c.stages() - 1);
  FK_CHECK(c.image_size >= divisor && c.image_size % divisor == 0 && c.image_size <= 4096, source, ": image_size ",
           c.image_size, " must be a multiple of ", divisor, " (the patch times the downsamplings), at most 4096");
  return c;
}

}  // namespace fk::models::vision
