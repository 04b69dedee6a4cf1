#include "models/world/oasis/oasis_config.h"

#include <nlohmann/json.hpp>

#include "fk/status.h"
#include "models/config_json.h"

namespace fk::models::world {
namespace {

using nlohmann::json;

int64_t int_field(const json& j, const char* key, int64_t fallback, std::string_view source) {
  return config_int(j, key, fallback, source, "Oasis");
}

}  // namespace

OasisConfig parse_oasis_config(std::string_view config_json, std::string_view source) {
  const json j = parse_config_object(config_json, source);
  const std::string cls = j.value("_class_name", std::string());
  FK_CHECK(cls == "OasisDiT", source, ": _class_name '", cls, "' is not an Oasis DiT config (expected \"OasisDiT\")");
  OasisConfig c;
  c.input_h = int_field(j, "input_h", c.input_h, source);
  c.input_w = int_field(j, "input_w", c.input_w, source);
  c.patch_size = int_field(j, "patch_size", c.patch_size, source);
  c.in_channels = int_field(j, "in_channels", c.in_channels, source);
  c.hidden_size = int_field(j, "hidden_size", c.hidden_size, source);
  c.depth = int_field(j, "depth", c.depth, source);
  c.num_heads = int_field(j, "num_heads", c.num_heads, source);
  c.external_cond_dim = int_field(j, "external_cond_dim", c.external_cond_dim, source);
  c.max_frames = int_field(j, "max_frames", c.max_frames, source);
  if (j.contains("mlp_ratio") && !j["mlp_ratio"].is_null()) {
    FK_CHECK(j["mlp_ratio"].is_number(), source, ": 'mlp_ratio' must be a number, got ", j["mlp_ratio"].dump());
    c.mlp_ratio = j["mlp_ratio"].get<double>();
  }
  FK_CHECK(c.input_h >= 1 && c.input_w >= 1 && c.patch_size >= 1 && c.in_channels >= 1 && c.hidden_size >= 1 &&
               c.depth >= 1 && c.num_heads >= 1 && c.external_cond_dim >= 0 && c.max_frames >= 1 && c.mlp_ratio > 0,
           source, ": input_h, input_w, patch_size, in_channels, hidden_size, depth, num_heads, max_frames and ",
           "mlp_ratio must be positive, external_cond_dim not negative");
  FK_CHECK(c.input_h % c.patch_size == 0 && c.input_w % c.patch_size == 0, source, ": the latent frame ", c.input_h,
           "x", c.input_w, " is not a whole number of ", c.patch_size, "x", c.patch_size, " patches");
  FK_CHECK(c.hidden_size % c.num_heads == 0, source, ": hidden_size ", c.hidden_size,
           " is not a multiple of num_heads ", c.num_heads);
  const int64_t d = c.head_dim();
  // The spatial RoPE turns half the head by the row and half by the column, in pairs.
  FK_CHECK(d % 8 == 0 && d >= 8 && d <= 256, source, ": head dim ", d,
           " (hidden_size / num_heads) is not supported: varlen_attention takes multiples of 8 up to 256, and the ",
           "spatial RoPE needs it divisible by 4");
  FK_CHECK(static_cast<double>(c.mlp_hidden()) == static_cast<double>(c.hidden_size) * c.mlp_ratio, source,
           ": hidden_size x mlp_ratio = ", static_cast<double>(c.hidden_size) * c.mlp_ratio, " is not a whole number");
  return c;
}

}  // namespace fk::models::world
