#include "models/diffusion/flux/flux_config.h"

#include <nlohmann/json.hpp>

#include "fk/status.h"
#include "models/config_json.h"

namespace fk::models::diffusion {
namespace {

using nlohmann::json;

int64_t int_field(const json& j, const char* key, int64_t fallback, std::string_view source) {
  return config_int(j, key, fallback, source, "FLUX");
}

}  // namespace

FluxConfig parse_flux_config(std::string_view config_json, std::string_view source) {
  const json j = parse_config_object(config_json, source);
  const std::string cls = j.value("_class_name", std::string());
  FK_CHECK(cls == "FluxTransformer2DModel", source, ": _class_name '", cls,
           "' is not a FLUX transformer config (expected \"FluxTransformer2DModel\")");
  FluxConfig c;
  c.patch_size = int_field(j, "patch_size", c.patch_size, source);
  c.in_channels = int_field(j, "in_channels", c.in_channels, source);
  c.out_channels = int_field(j, "out_channels", c.in_channels, source);
  c.num_layers = int_field(j, "num_layers", c.num_layers, source);
  c.num_single_layers = int_field(j, "num_single_layers", c.num_single_layers, source);
  c.attention_head_dim = int_field(j, "attention_head_dim", c.attention_head_dim, source);
  c.num_attention_heads = int_field(j, "num_attention_heads", c.num_attention_heads, source);
  c.joint_attention_dim = int_field(j, "joint_attention_dim", c.joint_attention_dim, source);
  c.pooled_projection_dim = int_field(j, "pooled_projection_dim", c.pooled_projection_dim, source);
  if (j.contains("guidance_embeds") && !j["guidance_embeds"].is_null()) {
    FK_CHECK(j["guidance_embeds"].is_boolean(), source, ": 'guidance_embeds' must be true or false, got ",
             j["guidance_embeds"].dump());
    c.guidance_embeds = j["guidance_embeds"].get<bool>();
  }
  if (j.contains("axes_dims_rope") && !j["axes_dims_rope"].is_null()) {
    const json& a = j["axes_dims_rope"];
    FK_CHECK(a.is_array() && a.size() == 3, source, ": 'axes_dims_rope' must list 3 axis widths (FLUX's ids are ",
             "(modality, row, column)), got ", a.dump());
    for (size_t i = 0; i < 3; ++i) {
      FK_CHECK(a[i].is_number_integer(), source, ": 'axes_dims_rope' must hold integers, got ", a.dump());
      c.axes_dims_rope[i] = a[i].get<int64_t>();
    }
  }
  // Refusals: what diffusers' class accepts but this engine does not run.
  FK_CHECK(c.patch_size >= 1 && c.in_channels >= 1 && c.out_channels >= 1 && c.num_layers >= 0 &&
               c.num_single_layers >= 0 && c.num_attention_heads >= 1 && c.joint_attention_dim >= 1 &&
               c.pooled_projection_dim >= 1,
           source, ": patch_size, in_channels, out_channels, num_attention_heads, joint_attention_dim and ",
           "pooled_projection_dim must be positive, num_layers and num_single_layers not negative");
  FK_CHECK(c.num_layers + c.num_single_layers >= 1, source, ": a FLUX transformer needs at least one block");
  const int64_t d = c.attention_head_dim;
  FK_CHECK(d % 8 == 0 && d >= 8 && d <= 256, source, ": attention_head_dim ", d,
           " is not supported: varlen_attention takes multiples of 8 up to 256");
  int64_t rope = 0;
  for (int64_t a : c.axes_dims_rope) {
    FK_CHECK(a >= 0 && a % 2 == 0, source, ": every axes_dims_rope entry must be even and not negative (pairs of ",
             "rotated dims), got ", j["axes_dims_rope"].dump());
    rope += a;
  }
  FK_CHECK(rope == d, source, ": axes_dims_rope sums to ", rope, " but attention_head_dim is ", d,
           " (FLUX rotates the whole head)");
  return c;
}

}  // namespace fk::models::diffusion
