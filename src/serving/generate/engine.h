// The inference engine: requests in, tokens out. Loads a model (HF checkpoint or random
// weights of a config), sizes the paged KV cache from the device's free memory, and runs
// scheduler steps (token budget, chunked prefill, decode-first, recompute preemption,
// prefix caching) through the model runner (packed inputs, CUDA graphs for decode).
// The same engine runs on the CPU backend (the ops' CPU implementations) for tests.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/device.h"
#include "runtime/state/kv_cache.h"
#include "runtime/state/kv_cache_manager.h"
#include "models/llm/decoder_model.h"
#include "serving/generate/model_runner.h"
#include "serving/generate/request.h"
#include "serving/generate/request_images.h"
#include "serving/generate/scheduler.h"

namespace fk::engine {

struct EngineConfig {
  // A built-in config name (fk::model_config_names(): random weights) or a folder holding
  // config.json and safetensors (weights loaded unless dummy_weights).
  std::string model = "tiny-llama";
  bool dummy_weights = false;
  uint64_t weight_seed = 0;
  DType dtype = DType::bf16;
  // "" runs the weights as the checkpoint holds them; "fp8" runs the routed experts of an
  // MoE model in block fp8, quantizing them at load where they are not (apply_quantization).
  // A block-fp8 checkpoint runs its experts in fp8 either way.
  std::string quantization;
  DeviceType backend = DeviceType::cpu;
  int64_t max_num_batched_tokens = 8192;
  // 384: on an H100 with Llama-3.1-8B shapes, the offline benchmark (1,000 requests of
  // 128-1024 in and out) ran 8,746 output tokens/s at 256, 9,275 at 384 (no preemption) and
  // 8,934 at 512 (190 preemptions): bench/results/h100/engine_throughput*.json.
  int64_t max_num_seqs = 384;
  int64_t max_model_len = 0;        // 0: the config's max_position_embeddings, at most 32768
  int64_t page_size = 16;
  int64_t num_pages = 0;            // 0: from free device memory (CUDA), 2048 (CPU)
  double gpu_memory_utilization = 0.90;  // fraction of the device the engine may fill
  // Models with recurrent state (Qwen3-Next) run without it (the engine says why on stderr):
  // a cached block would need the state at its boundary.
  bool prefix_caching = true;
  bool chunked_prefill = true;
  // Not for models with recurrent state (turned off for them, saying why on stderr).
  bool cuda_graphs = true;
  // Decode graphs' attention grid class (fk/ops/attention.h): 0 picks one per step by the
  // batch's context lengths (a graph is captured per batch size and class); 1..3 always
  // that class (for comparing them; only its graphs are captured).
  int32_t decode_graph_grid = 0;
  // Schedule and launch step N+1 while the device runs step N (Scheduler's
  // max_steps_in_flight = 2): the host's scheduling, packing and bookkeeping hide behind
  // the device's work. Tokens are the same either way.
  bool async_scheduling = true;
  uint64_t seed = 0;                // derives the sampling seed of requests that bring none

  void validate() const;
};

// The config EngineConfig::model names: a folder's config.json, else a built-in config
// (throws naming the model when it is neither). Lets callers learn what a model is (MoE or
// dense, its family) without loading its weights.
ModelConfig model_config_of(const std::string& model);

struct GenerationResult {
  std::string id;
  std::vector<int64_t> prompt_tokens;
  std::vector<int64_t> output_tokens;
  std::vector<TokenLogprobs> output_logprobs;  // one per output token when params.logprobs was set
  FinishReason finish_reason = FinishReason::none;
  int64_t num_cached_tokens = 0;  // prompt tokens served by the prefix cache
  int64_t num_preemptions = 0;
  double arrival_s = 0, first_token_s = 0, finished_s = 0;  // engine clock
};

// Tokens a step appended, for streaming.
struct StepToken {
  std::string id;
  int64_t token = 0;
  bool finished = false;
  std::optional<TokenLogprobs> logprobs;  // when the request asked for logprobs
};

struct EngineStats {
  int64_t steps = 0, prefill_tokens = 0, decode_tokens = 0, graph_replays = 0, preemptions = 0;
  int64_t num_pages = 0, page_size = 0, free_pages = 0;
  int64_t weight_bytes = 0, kv_bytes = 0, activation_bytes = 0;
  int64_t state_bytes = 0, state_slots = 0;  // the recurrent state pool (models with recurrent state)
  // Step kinds and where the time went (seconds summed over steps): scheduling and
  // bookkeeping on the host, the runner's host preparation, and launch-to-tokens.
  int64_t decode_steps = 0, mixed_steps = 0, prefill_steps = 0;
  double schedule_s = 0, prepare_s = 0, run_s = 0, update_s = 0;
};

class Engine {
 public:
  explicit Engine(EngineConfig config);
  ~Engine();

  // Queues a request; returns its id (`id`, or a fresh one). Throws for bad parameters, an
  // empty prompt, token ids outside the vocabulary, or a prompt the cache can never hold.
  // `images`: the request's images (models that read them; one RequestImages per request),
  // checked against the prompt's image tokens here (named errors).
  std::string add_request(std::vector<int64_t> prompt, SamplingParams params, std::string id = "",
                          std::shared_ptr<RequestImages> images = nullptr);
  bool abort(const std::string& id);
  bool has_unfinished() const;
  // One scheduler step and model call. Returns the requests that finished in it;
  // `tokens` (optional) receives every token the step produced. With async_scheduling the
  // step whose tokens come back is the one launched by the previous call (or this one, the
  // first time), and the next step is already running when this returns.
  std::vector<GenerationResult> step(std::vector<StepToken>* tokens = nullptr);
  // Runs the prompts to completion; results in the order of the prompts.
  std::vector<GenerationResult> generate(const std::vector<std::vector<int64_t>>& prompts,
                                         const SamplingParams& params);

  // Teacher forcing: the logits of the last `last_n` positions of `tokens` computed in one
  // prefill, as floats [last_n, V]. Only while no request is in the engine (it borrows KV
  // blocks from the pool and gives them back).
  std::vector<float> prefill_logits(const std::vector<int64_t>& tokens, int64_t last_n,
                                    std::shared_ptr<RequestImages> images = nullptr);
  // The same for several sequences packed into one prefill, as a step packs prompts (each
  // a fresh sequence: a kernel that lets them see each other's state or KV shows in their
  // logits): the logits at each one's `positions[i]` (token indices, increasing),
  // [positions[i].size(), V]. Their tokens must fit one step (max_num_batched_tokens) and
  // their logit rows max_num_seqs.
  std::vector<std::vector<float>> prefill_logits_packed(const std::vector<std::vector<int64_t>>& sequences,
                                                        const std::vector<std::vector<int64_t>>& positions);
  // Teacher forcing through the decode path: each sequence's tokens but its last `last_n[i]`
  // as one packed prefill, then those tokens one decode step at a time (the sequences
  // batched in each step, their state and KV carried from step to step, as the engine
  // decodes). Returns each step's logits, [last_n[i], V] floats: row j is the logits at
  // position L - last_n[i] + j, as prefill_logits would give them. Eager (no CUDA graph).
  std::vector<std::vector<float>> decode_logits_packed(const std::vector<std::vector<int64_t>>& sequences,
                                                       const std::vector<int64_t>& last_n);
  // The model's vision side (Qwen3-VL), or null for models that read no images.
  ImageEncoder* image_encoder() const { return image_encoder_.get(); }

  const ModelSpec& spec() const { return model_->spec(); }
  const EngineConfig& config() const { return config_; }
  int64_t max_model_len() const { return max_model_len_; }
  EngineStats stats() const;
  double now_s() const;

 private:
  class BorrowedSequences;
  void size_kv_cache(int64_t bytes_per_page);
  // Prepares a request's images (or checks that a text prompt holds no image tokens).
  void check_images(const std::vector<int64_t>& prompt, const std::shared_ptr<RequestImages>& images,
                    const std::string& id) const;
  // A scheduled step on its way: launched (ticket) unless it scheduled nobody.
  struct StepInFlight {
    SchedulerOutput out;
    std::optional<ModelRunner::Ticket> ticket;
  };
  StepInFlight launch(SchedulerOutput out);
  // Waits for the step's tokens, applies them (update) and turns finished requests into
  // results; appends the tokens it kept to `tokens`.
  void complete(StepInFlight& step, std::vector<StepToken>* tokens, std::vector<GenerationResult>& results);

  EngineConfig config_;
  std::unique_ptr<EngineStream> stream_;
  std::unique_ptr<DecoderModel> model_;
  std::unique_ptr<KvCache> kv_;
  std::unique_ptr<KvCacheManager> blocks_;
  // Models with linear-attention layers (Qwen3-Next): each running request's conv and
  // delta-rule state, one slot per request (max_num_seqs slots).
  std::unique_ptr<runtime::RecurrentSlotPool> state_pool_;
  std::unique_ptr<ImageEncoder> image_encoder_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ModelRunner> runner_;
  int64_t max_model_len_ = 0;
  int64_t next_request_ = 0;
  EngineStats stats_;
  std::chrono::steady_clock::time_point start_;
  std::vector<StepRequest> step_buffer_;
  std::optional<StepInFlight> in_flight_;  // async_scheduling: the step launched and not yet completed
  std::map<std::string, std::pair<double, double>> times_;  // id -> (arrival, first token)
};

}  // namespace fk::engine
