// DLRM (the dot-interaction DLRM of facebookresearch/dlrm, MLPerf's layout; the DLRMv2
// benchmark's multi-hot bags) as a models::Model of the Batch pattern: one forward pass over
// a batch of samples, every layer a registry op, no state between calls.
//
// Forward, B samples, T tables of D-wide rows, in the model dtype:
//   bottom MLP   x = dense_features; per layer: linear (+ bias), relu; the last relu writes
//                vector 0 of the feature buffer [B, T + 1, D]
//   embeddings   per table t: embedding_bag (sum) of the sample's ids into vector t + 1
//   interaction  dlrm_interaction over the T + 1 vectors: [B, D + (T + 1) T / 2]
//                (MLPerf: 128 + 351 = 479)
//   top MLP      per layer: linear (+ bias), relu between the layers; the last linear
//                writes the click logit [B, 1]
//                (the interaction and the top MLP are one dlrm_top call, L3)
// The probability is the logit's sigmoid, taken on the host by the runner (dlrm_predict.h):
// the registry has no sigmoid op, and one scalar a sample is not worth a kernel.
// The embedding lookups write straight into the feature buffer and the interaction reads
// its two parts from it, so nothing is concatenated; every GEMM operand's rows are padded to
// a multiple of 8 elements (16-byte aligned rows for cuBLASLt).
//
// Inputs (StepInputs::tensors, on the model's device):
//   "dense_features" [B, dense_features], the model dtype, rows contiguous (row stride free;
//                    the runner pads rows to 8): MLPerf's log(1 + x) of the integer features
//   "indices"        [N] i32 or i64: every table's ids, table after table (table 0's bags
//                    of samples 0..B-1, then table 1's, ...), each below its table's rows
//   "offsets"        [T B + 1], the dtype of indices: bag (t, b) is
//                    indices[offsets[t B + b] .. offsets[t B + b + 1]) (FBGEMM's layout; each
//                    table's lookup reads its slice of the offsets, PyTorch's include_last_offset)
// B is at most LoadOptions::max_tokens (the samples the buffers are sized for).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fk/tensor.h"
#include "models/model.h"
#include "models/recsys/dlrm/dlrm_config.h"
#include "models/recsys/dlrm/dlrm_weights.h"

namespace fk::models::recsys {

class DlrmModel final : public Model {
 public:
  explicit DlrmModel(DlrmConfig config);
  static std::unique_ptr<Model> from_config(std::string_view config_json, std::string_view source);

  std::string_view architecture() const override { return "dlrm"; }
  RunPattern pattern() const override { return RunPattern::batch; }
  std::string task_category() const override { return "recommendation-specialised"; }
  std::vector<TensorDecl> weights() const override;
  std::vector<TensorDecl> inputs() const override;
  std::vector<TensorDecl> outputs() const override;
  std::vector<runtime::StateSpec> state() const override { return {}; }

  void load(const LoadOptions& options) override;
  bool loaded() const override { return loaded_; }
  // Reads the batch size from dense_features' shape (no device reads).
  void plan(const StepInputs& in, void* stream) override;
  // Returns the click logits [B, 1] of the planned batch.
  TensorView forward(const StepInputs& in, void* stream) override;

  const DlrmConfig& config() const { return config_; }
  const LoadOptions& load_options() const { return options_; }
  // The interaction's output of the last forward, [B, D + (T + 1) T / 2]: the top MLP's input.
  TensorView interaction_output() const;

 private:
  // One MLP: each layer's linear into `pre`, then (where `relu_last` or before the last
  // layer) relu into the next layer's input; the last layer writes `last_out`.
  void mlp(const std::vector<DlrmLinear>& layers, TensorView x, const TensorView& last_out, bool relu_last,
           void* stream);
  TensorView slot(int64_t vector) const;  // vector `vector` of the feature buffer, [B, D]

  DlrmConfig config_;
  LoadOptions options_;
  bool loaded_ = false;
  DlrmWeights weights_;
  // Activations for options_.max_tokens samples.
  Tensor features_;     // [max, T + 1, D]: the bottom MLP's output, then each table's pooled rows
  Tensor interaction_;  // [max, dlrm_padded(D + (T + 1) T / 2)]
  Tensor pre_, post_;   // [max, dlrm_padded(widest layer)]: a linear's output, its relu
  Tensor logits_;       // [max, 1]
  int64_t batch_ = 0;   // the planned batch
};

}  // namespace fk::models::recsys
