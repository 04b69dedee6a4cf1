#include "models/vlm/qwen3_vl/vision_config.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "fk/status.h"

namespace fk::models::vlm {
namespace {

using nlohmann::json;

int64_t int_field(const json& j, const char* key, int64_t fallback, std::string_view source) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  FK_CHECK(j[key].is_number_integer(), source, ": Qwen3-VL vision_config '", key, "' must be an integer, got ",
           j[key].dump());
  return j[key].get<int64_t>();
}

}  // namespace

int64_t Qwen3VLVisionConfig::grid_side() const {
  return static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(num_position_embeddings))));
}

Qwen3VLVisionConfig parse_qwen3_vl_vision_config(std::string_view config_json, std::string_view source) {
  json j;
  try {
    j = json::parse(config_json);
  } catch (const json::exception& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": not valid JSON: ", e.what());
  }
  FK_CHECK(j.is_object(), source, ": a config must be a JSON object");
  const std::string type = j.value("model_type", std::string());
  if (type == "qwen3_vl" || type == "qwen3_vl_moe") {
    FK_CHECK(j.contains("vision_config") && j["vision_config"].is_object(), source, ": a ", type,
             " config needs a 'vision_config' object");
    j = j["vision_config"];
  } else {
    FK_CHECK(type == "qwen3_vl_vision" || type == "qwen3_vl_moe_vision" || type.empty(), source, ": model_type '", type,
             "' is not a Qwen3-VL config (expected qwen3_vl, qwen3_vl_moe or their vision_config)");
  }
  Qwen3VLVisionConfig c;
  c.depth = int_field(j, "depth", c.depth, source);
  c.hidden_size = int_field(j, "hidden_size", c.hidden_size, source);
  c.intermediate_size = int_field(j, "intermediate_size", c.intermediate_size, source);
  c.num_heads = int_field(j, "num_heads", c.num_heads, source);
  c.in_channels = int_field(j, "in_channels", c.in_channels, source);
  c.patch_size = int_field(j, "patch_size", c.patch_size, source);
  c.temporal_patch_size = int_field(j, "temporal_patch_size", c.temporal_patch_size, source);
  c.spatial_merge_size = int_field(j, "spatial_merge_size", c.spatial_merge_size, source);
  c.out_hidden_size = int_field(j, "out_hidden_size", c.out_hidden_size, source);
  c.num_position_embeddings = int_field(j, "num_position_embeddings", c.num_position_embeddings, source);
  if (j.contains("deepstack_visual_indexes") && !j["deepstack_visual_indexes"].is_null()) {
    FK_CHECK(j["deepstack_visual_indexes"].is_array(), source, ": deepstack_visual_indexes must be a list of integers");
    c.deepstack_visual_indexes.clear();
    for (const auto& e : j["deepstack_visual_indexes"]) {
      FK_CHECK(e.is_number_integer(), source, ": deepstack_visual_indexes must hold integers, got ", e.dump());
      c.deepstack_visual_indexes.push_back(e.get<int64_t>());
    }
  }
  const std::string act = j.value("hidden_act", std::string("gelu_pytorch_tanh"));
  if (act == "gelu_pytorch_tanh" || act == "gelu_new")
    c.gelu = ops::GeluApprox::tanh;
  else if (act == "gelu")
    c.gelu = ops::GeluApprox::none;
  else
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": vision hidden_act '", act,
            "' is not supported (gelu_pytorch_tanh, gelu_new, gelu)");

  FK_CHECK(c.depth > 0 && c.hidden_size > 0 && c.intermediate_size > 0 && c.num_heads > 0 && c.in_channels > 0 &&
               c.patch_size > 0 && c.temporal_patch_size > 0 && c.spatial_merge_size > 0 && c.out_hidden_size > 0 &&
               c.num_position_embeddings > 0,
           source, ": vision depth, hidden_size, intermediate_size, num_heads, in_channels, patch_size, ",
           "temporal_patch_size, spatial_merge_size, out_hidden_size and num_position_embeddings must be positive");
  FK_CHECK(c.hidden_size % c.num_heads == 0, source, ": vision hidden_size ", c.hidden_size,
           " is not a multiple of num_heads ", c.num_heads);
  const int64_t d = c.head_dim();
  // The 2D rope gives each of the row and column a quarter of the head's dims (pairs of
  // rotate-half): the head dim must split in four; attention takes multiples of 8 to 256.
  FK_CHECK(d % 8 == 0 && d <= 256, source, ": vision head dim ", d,
           " (hidden_size / num_heads) is not supported: varlen_attention and the 2D rope take multiples of 8 up to 256");
  const int64_t side = c.grid_side();
  FK_CHECK(side * side == c.num_position_embeddings, source, ": num_position_embeddings ", c.num_position_embeddings,
           " is not a square (the learned position grid is side x side)");
  for (int64_t idx : c.deepstack_visual_indexes)
    FK_CHECK(idx >= 0 && idx < c.depth, source, ": deepstack_visual_indexes entry ", idx, " is outside the ", c.depth,
             " blocks");
  for (size_t a = 0; a < c.deepstack_visual_indexes.size(); ++a)
    for (size_t b = a + 1; b < c.deepstack_visual_indexes.size(); ++b)
      FK_CHECK(c.deepstack_visual_indexes[a] != c.deepstack_visual_indexes[b], source,
               ": deepstack_visual_indexes lists block ", c.deepstack_visual_indexes[a], " twice");
  return c;
}

}  // namespace fk::models::vlm
