// The interface every architecture implements (DESIGN.md, "Models, state and run
// patterns"). A model is made from its own config text (HF config.json, or the diffusers /
// timm equivalent) and says what it is: the tensors of its upstream checkpoint under their
// upstream names, its inputs and outputs, and the state each layer group keeps. Loaded
// onto a device it plans and runs one forward step on a stream, calling ops only through
// the op registry. What drives the steps (scheduler, noise schedule, batching) belongs to
// its run pattern's runner, not to the model. Architectures register themselves with the
// model registry (models/registry.h).
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fk/dtype.h"
#include "fk/tensor_view.h"
#include "runtime/state/state_spec.h"

namespace fk::engine {
struct ForwardBatch;
class KvCache;
}  // namespace fk::engine

namespace fk::models {

// How a model is run: Generate (autoregressive, paged state, sampling), Denoise (a loop of
// steps over a noise schedule), Batch (one forward pass over a batch of inputs).
enum class RunPattern : uint8_t { generate, denoise, batch };
std::string_view run_pattern_name(RunPattern pattern);
std::optional<RunPattern> run_pattern_from_name(std::string_view name);

// A dimension that each call sets (the tokens of a step, the images of a batch).
inline constexpr int64_t kPerCall = -1;

// A tensor the model reads, writes or holds.
struct TensorDecl {
  std::string name;            // weights: the upstream checkpoint's name
  std::vector<int64_t> shape;  // kPerCall where each call sets the size
  DType dtype = DType::bf16;
  std::string meaning;         // inputs and outputs: what the values are
};

// Where a model's weights come from and what it is sized for.
struct LoadOptions {
  Device device = Device::cpu();
  DType dtype = DType::bf16;
  // A folder (or file) of safetensors named as the upstream checkpoint names them; empty:
  // random weights of the config's shapes drawn from `seed`.
  std::filesystem::path checkpoint;
  uint64_t seed = 0;
  // The largest step the activation buffers hold: tokens (or samples), sequences, and the
  // longest position (0: the config's own limit).
  int64_t max_tokens = 256;
  int64_t max_seqs = 16;
  int64_t max_position = 0;
  void* stream = nullptr;
};

// One step's inputs, as the pattern's runner prepares them. Generate: the packed batch
// (tokens, positions, paged-attention metadata) and the paged KV cache of the model's
// paged_kv groups; Denoise and Batch: tensors named as inputs() declares them.
struct StepInputs {
  const engine::ForwardBatch* batch = nullptr;
  const engine::KvCache* kv = nullptr;
  // Generate, decode-only batches: the decode attention's graph grid class (0: eager).
  int32_t graph_grid = 0;
  std::vector<std::pair<std::string, TensorView>> tensors;
};

class Model {
 public:
  virtual ~Model() = default;

  // The registered architecture ("llama"): models/registry.h's key.
  virtual std::string_view architecture() const = 0;
  virtual RunPattern pattern() const = 0;
  // The category the benchmark files this model's tasks and results under
  // (tasks/<category>/); a finer cut than the registration's category where the tasks
  // need one (decoder LLMs: "dense-llm" or "moe-llm").
  virtual std::string task_category() const = 0;

  // Every tensor of the upstream checkpoint, named and shaped as upstream stores it.
  virtual std::vector<TensorDecl> weights() const = 0;
  virtual std::vector<TensorDecl> inputs() const = 0;
  virtual std::vector<TensorDecl> outputs() const = 0;
  // The state each layer group keeps per sequence (empty for stateless models).
  virtual std::vector<runtime::StateSpec> state() const = 0;

  // Puts the weights on the device and allocates the activations for the largest step.
  // Throws naming the missing or mis-shaped tensor of a checkpoint.
  virtual void load(const LoadOptions& options) = 0;
  virtual bool loaded() const = 0;
  // Host-side preparation of a step (no device reads; outside graph capture).
  virtual void plan(const StepInputs& in, void* stream) = 0;
  // Launches the step on `stream`; returns the output (Generate: the requested rows'
  // logits), valid once the stream reaches it.
  virtual TensorView forward(const StepInputs& in, void* stream) = 0;
};

}  // namespace fk::models
