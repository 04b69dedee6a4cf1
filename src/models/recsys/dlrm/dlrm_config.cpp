#include "models/recsys/dlrm/dlrm_config.h"

#include <nlohmann/json.hpp>
#include <string>

#include "fk/ops/recsys.h"
#include "fk/status.h"
#include "models/config_json.h"

namespace fk::models::recsys {
namespace {

using nlohmann::json;

int64_t required_positive(const json& j, const char* key, std::string_view source) {
  FK_CHECK(j.contains(key) && j[key].is_number_integer() && j[key].get<int64_t>() > 0, source,
           ": DLRM config needs a positive integer '", key, "'", j.contains(key) ? ", got " + j[key].dump() : "");
  return j[key].get<int64_t>();
}

std::vector<int64_t> positive_list(const json& j, const char* key, std::string_view source) {
  FK_CHECK(j.contains(key) && j[key].is_array() && !j[key].empty(), source, ": DLRM config needs '", key,
           "', a non-empty list of positive integers");
  std::vector<int64_t> out;
  for (size_t i = 0; i < j[key].size(); ++i) {
    const json& e = j[key][i];
    FK_CHECK(e.is_number_integer() && e.get<int64_t>() > 0, source, ": DLRM config '", key, "'[", i,
             "] must be a positive integer, got ", e.dump());
    out.push_back(e.get<int64_t>());
  }
  return out;
}

}  // namespace

int64_t DlrmConfig::total_rows() const {
  int64_t n = 0;
  for (int64_t r : table_sizes) n += r;
  return n;
}

DlrmConfig parse_dlrm_config(std::string_view config_json, std::string_view source) {
  const json j = parse_config_object(config_json, source);
  const std::string type = j.value("model_type", std::string());
  FK_CHECK(type == "dlrm", source, ": model_type '", type, "' is not a DLRM config (expected \"dlrm\")");
  DlrmConfig c;
  c.dense_features = required_positive(j, "dense_features", source);
  c.embedding_dim = required_positive(j, "embedding_dim", source);
  c.table_sizes = positive_list(j, "table_sizes", source);
  c.bottom_mlp = positive_list(j, "bottom_mlp", source);
  c.top_mlp = positive_list(j, "top_mlp", source);

  const int64_t sparse = config_int(j, "sparse_features", c.num_tables(), source, "DLRM");
  FK_CHECK(sparse == c.num_tables(), source, ": sparse_features = ", sparse, " but table_sizes lists ", c.num_tables(),
           " tables (one embedding table per sparse feature)");
  if (j.contains("max_ind_range") && !j["max_ind_range"].is_null()) {
    c.max_ind_range = required_positive(j, "max_ind_range", source);
    for (size_t t = 0; t < c.table_sizes.size(); ++t)
      FK_CHECK(c.table_sizes[t] <= *c.max_ind_range, source, ": table_sizes[", t, "] = ", c.table_sizes[t],
               " rows, more than max_ind_range ", *c.max_ind_range, " (ids are hashed below it)");
  }
  FK_CHECK(c.bottom_mlp.back() == c.embedding_dim, source, ": the bottom MLP must end at embedding_dim ",
           c.embedding_dim, " (its output is one of the vectors the dot interaction pairs), got ", c.bottom_mlp.back());
  FK_CHECK(c.top_mlp.back() == 1, source, ": the top MLP must end in 1 output (the click logit), got ",
           c.top_mlp.back());
  FK_CHECK(static_cast<int64_t>(c.top_mlp.size()) <= ops::DlrmTopArgs::kMaxLayers, source, ": the top MLP has ",
           c.top_mlp.size(), " layers; the dlrm_top op takes at most ", ops::DlrmTopArgs::kMaxLayers);

  const std::string op = j.value("interaction", std::string("dot"));
  FK_CHECK(op == "dot", source, ": interaction '", op,
           "' is not supported (only \"dot\": DLRM's pairwise dot products; the \"cat\" interaction and "
           "DLRM-DCNv2's cross network are not implemented)");
  if (j.contains("interaction_itself") && !j["interaction_itself"].is_null()) {
    FK_CHECK(j["interaction_itself"].is_boolean(), source, ": 'interaction_itself' must be true or false, got ",
             j["interaction_itself"].dump());
    FK_CHECK(!j["interaction_itself"].get<bool>(), source,
             ": interaction_itself = true (each vector's dot with itself) is not supported");
  }
  return c;
}

}  // namespace fk::models::recsys
