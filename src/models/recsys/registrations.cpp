// Recommendation models in the model registry. DLRM: the production config of MLPerf's
// DLRMv2 benchmark on Criteo 1TB (dummy weights) and a tiny config of the same graph, which
// is also the config of the golden checkpoint (tests/data/models/recsys/dlrm/, made by
// tests/data/models/recsys/make_dlrm_goldens.py).
//
// The tables: MLPerf's 26 Criteo 1TB vocabularies with every categorical id hashed modulo
// max_ind_range = 40,000,000 (five of them hit the cap): 204,184,588 rows of 128, 52 GB in
// bf16 (104 GB in fp32). The raw vocabularies hold about 880M rows (226 GB in bf16); the cap
// is what lets one GPU of 80 GB or more hold every table in bf16 or f16.
//
// The interaction is DLRM's pairwise dot product (dlrm_model.h), MLPerf's DLRM layout (13 ->
// 512 -> 256 -> 128 bottom MLP, 479 -> 1024 -> 1024 -> 512 -> 256 -> 1 top MLP); MLPerf's
// DLRMv2 reference puts DCNv2's cross network in that place, which this model does not
// implement (its config refuses "interaction": "dcn" by name). The DLRMv2 benchmark's
// multi-hot bags (1 to 100 ids a table and sample) are what the lookups pool.
#include "models/recsys/dlrm/dlrm_model.h"
#include "models/registry.h"

namespace fk::models::recsys {
namespace {

constexpr const char* kDlrmV2Config = R"({
  "model_type": "dlrm",
  "dense_features": 13,
  "embedding_dim": 128,
  "sparse_features": 26,
  "table_sizes": [40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956, 405282, 10, 2209,
                  11938, 155, 4, 976, 14, 40000000, 40000000, 40000000, 590152, 12973, 108, 36],
  "max_ind_range": 40000000,
  "bottom_mlp": [512, 256, 128],
  "top_mlp": [1024, 1024, 512, 256, 1],
  "interaction": "dot",
  "interaction_itself": false
})";

// The same graph, small: 5 dense features, 6 tables of 16 (one with a single row), 3 bottom
// and 5 top layers; widths that are not multiples of 8 (the padded rows), 37 interaction
// features.
constexpr const char* kTinyDlrmConfig = R"({
  "model_type": "dlrm",
  "dense_features": 5,
  "embedding_dim": 16,
  "sparse_features": 6,
  "table_sizes": [7, 30, 1, 100, 13, 64],
  "bottom_mlp": [32, 24, 16],
  "top_mlp": [48, 32, 16, 8, 1],
  "interaction": "dot",
  "interaction_itself": false
})";

ModelRegistration dlrm() {
  ModelRegistration r;
  r.architecture = "dlrm";
  r.names = {"DLRMv2"};
  r.category = "recommendation-specialised";
  r.pattern = RunPattern::batch;
  r.config_types = {"dlrm"};
  r.presets = {{"dlrmv2", PresetKind::production,
                "DLRM on MLPerf's Criteo 1TB tables (26 x 128, ids hashed below 4e7: 204M rows, 52 GB in bf16), "
                "13-512-256-128 bottom MLP, dot interaction (479), 1024-1024-512-256-1 top MLP",
                kDlrmV2Config},
               {"tiny-dlrmv2", PresetKind::tiny, "5 dense features, 6 tables of 16, MLPs 32-24-16 and 48-32-16-8-1",
                kTinyDlrmConfig}};
  r.backends = {"cpu", "cuda"};
  r.golden_test = "DlrmGolden.TinyMatchesPyTorchReference";
  r.factory = [](std::string_view json, std::string_view source) { return DlrmModel::from_config(json, source); };
  return r;
}

const ModelRegistrar kDlrm(dlrm());

}  // namespace
}  // namespace fk::models::recsys
