// OpenFold3's Pairformer stack (AlphaFold3 Algorithm 17, 48 blocks) as a models::Model of
// the Batch pattern: one forward pass over a batch of structures' single and pair
// representations, each block one pairformer_block op call (fk/ops/pairformer_block.h),
// no state between calls. The rest of the trunk (input embedder, MSA and template modules,
// recycling) and the diffusion module are not in the engine yet: s and z are inputs.
//
// Inputs (StepInputs::tensors), on the model's device, in the model dtype, contiguous:
//   "single"       [B, N, c_s]        s
//   "pair"         [B, N, N, c_z]     z
//   "single_mask"  [B, N]             1 for a real token, 0 for padding; optional
//   "pair_mask"    [B, N, N]          likewise per pair (OpenFold3: the outer product of the
//                                     token mask); optional
// B at most LoadOptions::max_seqs, N at most the config's max_tokens (the crop). The inputs
// are copied into the model's buffers (stream-ordered) and updated there block by block;
// forward returns the pair output, single_output() the single one.
#pragma once
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "fk/tensor.h"
#include "models/model.h"
#include "models/science/openfold3/openfold3_config.h"
#include "models/science/openfold3/openfold3_weights.h"

namespace fk::models::science {

class OpenFold3Model final : public Model {
 public:
  explicit OpenFold3Model(OpenFold3Config config);
  static std::unique_ptr<Model> from_config(std::string_view config_json, std::string_view source);

  std::string_view architecture() const override { return "openfold3"; }
  RunPattern pattern() const override { return RunPattern::batch; }
  std::string task_category() const override { return "science"; }
  std::vector<TensorDecl> weights() const override;
  std::vector<TensorDecl> inputs() const override;
  std::vector<TensorDecl> outputs() const override;
  std::vector<runtime::StateSpec> state() const override { return {}; }

  void load(const LoadOptions& options) override;
  bool loaded() const override { return loaded_; }
  // Checks the inputs' shapes (named errors: a structure longer than the crop, more
  // structures than max_seqs, a mask of the wrong shape).
  void plan(const StepInputs& in, void* stream) override;
  TensorView forward(const StepInputs& in, void* stream) override;

  const OpenFold3Config& config() const { return config_; }
  const LoadOptions& load_options() const { return options_; }
  const OpenFold3Weights& block_weights() const { return weights_; }
  // The outputs of the last forward: s [B, N, c_s] and z [B, N, N, c_z].
  TensorView single_output() const;
  TensorView pair_output() const;

 private:
  OpenFold3Config config_;
  LoadOptions options_;
  bool loaded_ = false;
  OpenFold3Weights weights_;
  Tensor single_, pair_, workspace_;  // sized for max_seqs structures of max_tokens
  int64_t batch_ = 0, tokens_ = 0;
  TensorView in_single_{}, in_pair_{}, single_mask_{}, pair_mask_{};
};

}  // namespace fk::models::science
