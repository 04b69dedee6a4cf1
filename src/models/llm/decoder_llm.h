// The decoder LLMs (every family of models/llm/families/) as a models::Model: the config
// parsed into a ModelSpec, the checkpoint's tensors as HF names them, the paged KV state of
// their attention layers, and DecoderModel running the steps once loaded.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/llm/decoder_model.h"
#include "models/llm/model_spec.h"
#include "models/model.h"

namespace fk::engine {

class DecoderLlm final : public models::Model {
 public:
  DecoderLlm(std::string architecture, ModelSpec spec);
  // Parses config.json text (throws naming the field or the unsupported setting).
  static std::unique_ptr<models::Model> from_config(std::string architecture, std::string_view config_json,
                                                    std::string_view source);

  std::string_view architecture() const override { return architecture_; }
  models::RunPattern pattern() const override { return models::RunPattern::generate; }
  std::string task_category() const override;
  std::vector<models::TensorDecl> weights() const override;
  std::vector<models::TensorDecl> inputs() const override;
  std::vector<models::TensorDecl> outputs() const override;
  std::vector<runtime::StateSpec> state() const override;

  void load(const models::LoadOptions& options) override;
  bool loaded() const override { return model_ != nullptr; }
  void plan(const models::StepInputs& in, void* stream) override;
  TensorView forward(const models::StepInputs& in, void* stream) override;

  const ModelSpec& spec() const { return spec_; }

 private:
  DecoderModel& running(const models::StepInputs& in) const;

  std::string architecture_;
  ModelSpec spec_;
  std::unique_ptr<DecoderModel> model_;
};

}  // namespace fk::engine
