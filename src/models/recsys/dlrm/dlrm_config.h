// The config of a DLRM with the dot interaction (facebookresearch/dlrm's DLRM_Net, the layout
// of MLPerf's DLRM on Criteo Terabyte), in a JSON format of our own: the reference takes its
// architecture as command-line flags, not a config file. Fields (the flag each mirrors):
//   "model_type": "dlrm"
//   "dense_features": 13                     the first entry of --arch-mlp-bot
//   "embedding_dim": 128                     --arch-sparse-feature-size (D)
//   "table_sizes": [...]                     rows of each embedding table, one table per
//                                            sparse feature (the reference's ln_emb)
//   "sparse_features": 26                    optional: must equal the number of tables
//   "bottom_mlp": [512, 256, 128]            --arch-mlp-bot after its input; ReLU after every
//                                            layer; the last width must be embedding_dim
//   "top_mlp": [1024, 1024, 512, 256, 1]     --arch-mlp-top after its input (which is
//                                            D + (T + 1) T / 2, T tables); ReLU between the
//                                            layers, none after the last (width 1: the click
//                                            logit, whose sigmoid is the probability)
//   "interaction": "dot"                     --arch-interaction-op (only "dot")
//   "interaction_itself": false              --arch-interaction-itself (only false)
//   "max_ind_range": 40000000                optional: --max-ind-range, the modulus the data
//                                            pipeline hashed the raw categorical ids with; no
//                                            table may have more rows
// Refused with named errors: other interactions (DLRM-DCNv2's cross network, the "cat"
// interaction), self-interaction, a bottom MLP that does not end at embedding_dim, a top
// MLP that does not end in one logit.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace fk::models::recsys {

struct DlrmConfig {
  int64_t dense_features = 0;
  int64_t embedding_dim = 0;
  std::vector<int64_t> table_sizes;
  std::vector<int64_t> bottom_mlp;  // output widths, the last = embedding_dim
  std::vector<int64_t> top_mlp;     // output widths, the last = 1
  std::optional<int64_t> max_ind_range;

  int64_t num_tables() const { return static_cast<int64_t>(table_sizes.size()); }
  // The interaction's output and the top MLP's input: D + (T + 1) T / 2 (MLPerf: 479).
  int64_t interaction_features() const { return embedding_dim + (num_tables() + 1) * num_tables() / 2; }
  int64_t total_rows() const;
};

// Parses config text; `source` names it in errors. Throws fk::Error naming the field or the
// unsupported setting.
DlrmConfig parse_dlrm_config(std::string_view config_json, std::string_view source);

// A row length rounded up to a multiple of 8 elements: the row stride the model gives its
// weights, inputs and activations, so every GEMM operand row starts 16-byte aligned (13 dense
// features and 479 interaction features are not multiples of 8).
inline int64_t dlrm_padded(int64_t n) { return (n + 7) / 8 * 8; }

}  // namespace fk::models::recsys
