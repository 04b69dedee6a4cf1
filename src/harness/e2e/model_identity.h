// What a model is, for grouping stored results: its id (one name however it was spelt on
// the command line) and its benchmark category, named as the task folders are
// (tasks/<category>/), as its registered architecture's Model says (models/registry.h:
// decoder LLMs are "moe-llm" when their config has routed experts, else "dense-llm").
#pragma once
#include <string>

#include "models/llm/model_config.h"

namespace fk::e2e {

std::string model_category(const ModelConfig& config);
// A built-in config name or a checkpoint folder (throws naming the model when it is neither).
std::string model_category(const std::string& model);
// A checkpoint folder's absolute path (the same checkpoint from any working directory), or
// the built-in config name in lower case (built-in names are case-insensitive).
std::string model_id(const std::string& model);

}  // namespace fk::e2e
