#include "models/science/openfold3/openfold3_config.h"

#include <nlohmann/json.hpp>
#include <string>

#include "fk/status.h"

namespace fk::models::science {
namespace {

using nlohmann::json;

// A positive integer field of `j`, or the default when absent.
void read_size(const json& j, const char* key, int64_t& value, std::string_view source) {
  if (!j.contains(key)) return;
  FK_CHECK(j[key].is_number_integer() && j[key].get<int64_t>() > 0, source, ": openfold3 config '", key,
           "' must be a positive integer, got ", j[key].dump());
  value = j[key].get<int64_t>();
}

}  // namespace

OpenFold3Config parse_openfold3_config(std::string_view json_text, std::string_view source) {
  json top;
  try {
    top = json::parse(json_text);
  } catch (const json::exception& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": not valid JSON: ", e.what());
  }
  FK_CHECK(top.is_object() && top.value("model_type", "") == "openfold3", source,
           ": not an openfold3 config (model_type must be \"openfold3\")");
  const json& j = top.contains("pairformer") && top["pairformer"].is_object() ? top["pairformer"] : top;
  OpenFold3Config c;
  read_size(j, "c_s", c.c_s, source);
  read_size(j, "c_z", c.c_z, source);
  read_size(j, "c_hidden_pair_bias", c.c_hidden_pair_bias, source);
  read_size(j, "no_heads_pair_bias", c.no_heads_pair_bias, source);
  read_size(j, "c_hidden_mul", c.c_hidden_mul, source);
  read_size(j, "c_hidden_pair_att", c.c_hidden_pair_att, source);
  read_size(j, "no_heads_pair", c.no_heads_pair, source);
  read_size(j, "no_blocks", c.no_blocks, source);
  read_size(j, "transition_n", c.transition_n, source);
  read_size(top, "max_tokens", c.max_tokens, source);
  read_size(j, "max_tokens", c.max_tokens, source);
  const std::string transition = j.value("transition_type", "swiglu");
  if (transition != "swiglu")
    FK_FAIL(FK_ERR_UNSUPPORTED, source, ": openfold3 transition_type '", transition,
           "' is not supported (the AlphaFold3 Pairformer's transition is swiglu)");
  if (j.value("fuse_projection_weights", false))
    FK_FAIL(FK_ERR_UNSUPPORTED, source,
           ": openfold3 fuse_projection_weights is not supported (AlphaFold2-Multimer's fused triangle "
           "multiplication with biases; the AlphaFold3 Pairformer's projections have none)");
  return c;
}

}  // namespace fk::models::science
