#include "serving/generate/engine.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <sstream>

#include "models/llm/weights.h"
#include "models/llm/model_config.h"
#include "models/vlm/qwen3_vl/image_encoder.h"
#include "fk/ops/attention.h"
#include "fk/philox.h"
#include "fk/runtime.h"
#include "core/safetensors/safetensors.h"
#include "fk/status.h"

namespace fk::engine {

namespace {

constexpr int64_t kDefaultMaxModelLen = 32768;
constexpr int64_t kCpuDefaultPages = 2048;

bool is_folder_model(const std::string& model) { return std::filesystem::is_directory(model); }

// The model's whole config.json text (a multimodal wrapper's vision side reads it too).
std::string config_text_of(const std::string& model) {
  if (!is_folder_model(model)) return std::string(model_config_json_by_name(model));
  std::ifstream in(std::filesystem::path(model) / "config.json", std::ios::binary);
  FK_CHECK(in.good(), "engine: cannot read ", model, "/config.json");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The most patches of one image request's images the vision tower takes (a 2048 x 2048
// image at Qwen3-VL's 16-pixel patches), at most four per token of the context.
constexpr int64_t kMaxImagePatches = 16384;

}  // namespace

ModelConfig model_config_of(const std::string& model) {
  return is_folder_model(model) ? load_model_config(model) : model_config_by_name(model);
}

void EngineConfig::validate() const {
  FK_CHECK(!model.empty(), "engine: no model given (a built-in config name or a checkpoint folder)");
  FK_CHECK(dtype == DType::bf16 || dtype == DType::f16, "engine: dtype must be bf16 or f16, got ", dtype_name(dtype));
  FK_CHECK(quantization.empty() || quantization == "fp8", "engine: quantization must be \"fp8\" or none, got '",
           quantization, "'");
  FK_CHECK(max_num_batched_tokens > 0, "engine: max_num_batched_tokens must be positive, got ", max_num_batched_tokens);
  FK_CHECK(max_num_seqs > 0, "engine: max_num_seqs must be positive, got ", max_num_seqs);
  FK_CHECK(max_model_len >= 0, "engine: max_model_len must be >= 0 (0 = the model's), got ", max_model_len);
  FK_CHECK(page_size > 0 && page_size <= 256, "engine: page_size must be in [1, 256], got ", page_size);
  FK_CHECK(num_pages >= 0, "engine: num_pages must be >= 0 (0 = from free memory), got ", num_pages);
  FK_CHECK(gpu_memory_utilization > 0 && gpu_memory_utilization <= 1,
           "engine: gpu_memory_utilization must be in (0, 1], got ", gpu_memory_utilization);
  FK_CHECK(decode_graph_grid >= 0 && decode_graph_grid <= ops::kDecodeGraphGrids,
           "engine: decode_graph_grid must be 0 (per step) or a class in [1, ", ops::kDecodeGraphGrids, "], got ",
           decode_graph_grid);
}

Engine::Engine(EngineConfig config) : config_(std::move(config)), start_(std::chrono::steady_clock::now()) {
  config_.validate();
  const bool cuda = config_.backend == DeviceType::cuda;
  if (cuda) FK_CHECK(rt::cuda_available(), "engine: the CUDA backend needs a CUDA device, and none is visible");
  stream_ = std::make_unique<EngineStream>(cuda);
  void* s = stream_->get();
  const Device dev = cuda ? Device::cuda(0) : Device::cpu();

  const bool folder = is_folder_model(config_.model);
  const ModelConfig mc = model_config_of(config_.model);
  ModelSpec spec = model_spec_for(mc);
  apply_quantization(spec, config_.quantization);
  max_model_len_ = config_.max_model_len > 0 ? config_.max_model_len
                                             : std::min(mc.max_position_embeddings, kDefaultMaxModelLen);
  FK_CHECK(max_model_len_ <= mc.max_position_embeddings || mc.max_position_embeddings <= 0, "engine: max_model_len ",
           max_model_len_, " exceeds the model's max_position_embeddings ", mc.max_position_embeddings);
  ModelWeights weights = (folder && !config_.dummy_weights)
                             ? load_checkpoint_weights(spec, safetensors::Checkpoint::open(config_.model), config_.dtype,
                                                       dev, s)
                             : dummy_weights(spec, config_.dtype, dev, config_.weight_seed, s);
  // A decode step of max_num_seqs requests is max_num_seqs tokens: the buffers hold either.
  const int64_t max_tokens = std::max(config_.max_num_batched_tokens, config_.max_num_seqs);
  model_ = std::make_unique<DecoderModel>(std::move(spec), std::move(weights), dev, max_tokens, config_.max_num_seqs,
                                          config_.max_num_seqs, max_model_len_, s);
  const ModelConfig& c = model_->spec().config;
  // Qwen3-VL: its vision tower beside the text model. Prefix caching would match image
  // prompts by their placeholder tokens alone (the same for every image): off.
  if (const std::string text = config_text_of(config_.model); models::vlm::is_qwen3_vl_config(text)) {
    image_encoder_ = std::make_unique<models::vlm::Qwen3VLImageEncoder>(
        text, config_.model, folder && !config_.dummy_weights ? std::filesystem::path(config_.model) : "",
        config_.dtype, dev, config_.weight_seed + 1, std::min(kMaxImagePatches, 4 * max_model_len_), s);
    if (config_.prefix_caching) {
      std::cerr << "engine: prefix caching is off for model_type 'qwen3_vl': cached blocks are keyed on token ids, "
                   "and an image's placeholder tokens do not tell images apart\n";
      config_.prefix_caching = false;
    }
  }
  const bool recurrent = model_->spec().has_recurrent_state();
  if (recurrent) {
    // One slot per request that may run at once, beside the KV cache of the attention layers.
    state_pool_ = std::make_unique<runtime::RecurrentSlotPool>(DecoderModel::state_spec(model_->spec(), config_.dtype),
                                                               config_.max_num_seqs, dev, s);
    model_->set_state_pool(state_pool_.get());
    if (config_.prefix_caching) {
      std::cerr << "engine: prefix caching is off for model_type '" << c.model_type
                << "': its linear-attention layers keep recurrent state, which a cached block does not hold\n";
      config_.prefix_caching = false;
    }
  }
  const int64_t kv_layers = model_->spec().num_kv_layers();
  const int64_t bytes_per_page =
      KvCache::bytes_per_page(kv_layers, config_.page_size, c.num_key_value_heads, c.head_dim, config_.dtype);
  size_kv_cache(bytes_per_page);

  const int64_t pages = stats_.num_pages;
  // One page more than the pool hands out: the padding sequences of captured graphs use it.
  kv_ = std::make_unique<KvCache>(kv_layers, pages + 1, config_.page_size, c.num_key_value_heads, c.head_dim,
                                  config_.dtype, dev, s);
  blocks_ = std::make_unique<KvCacheManager>(pages, config_.page_size, config_.prefix_caching);
  SchedulerConfig sc;
  sc.max_num_batched_tokens = config_.max_num_batched_tokens;
  sc.max_num_seqs = config_.max_num_seqs;
  sc.chunked_prefill = config_.chunked_prefill;
  sc.max_steps_in_flight = config_.async_scheduling ? 2 : 1;
  scheduler_ = std::make_unique<Scheduler>(sc, *blocks_, state_pool_.get(), s);
  RunnerConfig rc;
  rc.max_tokens = max_tokens;
  rc.max_seqs = config_.max_num_seqs;
  rc.max_pages_per_seq = (max_model_len_ + config_.page_size - 1) / config_.page_size;
  rc.cuda_graphs = config_.cuda_graphs && cuda;
  rc.decode_graph_grid = config_.decode_graph_grid;
  runner_ = std::make_unique<ModelRunner>(*model_, *kv_, rc, s);
  runner_->set_image_encoder(image_encoder_.get());
  runner_->capture_graphs();
  stats_.page_size = config_.page_size;
  stats_.weight_bytes = model_->weights().bytes;
  stats_.kv_bytes = kv_->bytes();
  if (state_pool_) {
    stats_.state_bytes = state_pool_->bytes();
    stats_.state_slots = state_pool_->capacity();
  }
  stats_.activation_bytes = model_->activation_bytes();
}

Engine::~Engine() {
  // A step still in flight writes into buffers about to be freed: let it finish first.
  if (in_flight_ && config_.backend == DeviceType::cuda) {
    try {
      rt::stream_synchronize(stream_->get());
    } catch (const std::exception&) {  // a faulted device: nothing left to protect
    }
  }
}

// Pages the cache gets: as configured, or what fits in the device memory left after the
// weights, the activation buffers and a profiling step of the largest size.
void Engine::size_kv_cache(int64_t bytes_per_page) {
  if (config_.num_pages > 0) {
    stats_.num_pages = config_.num_pages;
    return;
  }
  if (config_.backend == DeviceType::cpu) {
    stats_.num_pages = kCpuDefaultPages;
    return;
  }
  void* s = stream_->get();
  const ModelConfig& c = model_->spec().config;
  const int64_t S = config_.page_size;
  {
    // Profiling pass: one prefill of the full token budget (every GEMM at its largest M,
    // library workspaces created), through the same runner the engine uses.
    const int64_t tokens = std::min(std::max(config_.max_num_batched_tokens, config_.max_num_seqs), max_model_len_);
    const int64_t pages = (tokens + S - 1) / S;
    KvCache probe_kv(model_->spec().num_kv_layers(), pages + 1, S, c.num_key_value_heads, c.head_dim, config_.dtype,
                     model_->device(), s);
    RunnerConfig rc;
    rc.max_tokens = std::max(config_.max_num_batched_tokens, config_.max_num_seqs);
    rc.max_seqs = config_.max_num_seqs;
    rc.max_pages_per_seq = pages;
    rc.cuda_graphs = false;
    ModelRunner probe(*model_, probe_kv, rc, s);
    Request r;
    r.id = "profile";
    r.prompt_tokens.assign(static_cast<size_t>(tokens), 0);
    r.params.temperature = 0;
    for (int64_t p = 0; p < pages; ++p) r.block_ids.push_back(static_cast<int32_t>(p));
    if (state_pool_) r.state_slot = state_pool_->allocate(-1, s);
    const StepRequest step{&r, 0, tokens, true};
    probe.execute({&step, 1});
    if (state_pool_) state_pool_->free(-1);
    rt::stream_synchronize(s);
  }
  const MemoryInfo mem = device_memory(0);
  const int64_t allowed_used = static_cast<int64_t>(static_cast<double>(mem.total_bytes) * config_.gpu_memory_utilization);
  const int64_t used = mem.total_bytes - mem.free_bytes;
  const int64_t budget = allowed_used - used;
  const int64_t pages = budget / bytes_per_page - 1;  // minus the padding page
  FK_CHECK(pages * S >= max_model_len_ || pages >= (config_.max_num_batched_tokens + S - 1) / S,
           "engine: the KV cache would get ", std::max<int64_t>(pages, 0), " pages (", budget / (1 << 20),
           " MiB free within gpu_memory_utilization ", config_.gpu_memory_utilization,
           "); raise gpu_memory_utilization or lower max_num_batched_tokens / max_model_len");
  stats_.num_pages = pages;
}

double Engine::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string Engine::add_request(std::vector<int64_t> prompt, SamplingParams params, std::string id,
                                std::shared_ptr<RequestImages> images) {
  params.validate();
  const int64_t V = model_->spec().config.vocab_size;
  FK_CHECK(!prompt.empty(), "engine: request ", id, " has an empty prompt");
  for (size_t i = 0; i < prompt.size(); ++i)
    FK_CHECK(prompt[i] >= 0 && prompt[i] < V, "engine: prompt token ", i, " is ", prompt[i],
             ", outside the vocabulary [0, ", V, ")");
  FK_CHECK(static_cast<int64_t>(prompt.size()) < max_model_len_, "engine: a prompt of ", prompt.size(),
           " tokens leaves no room for output within max_model_len ", max_model_len_);
  check_images(prompt, images, id);
  const int64_t number = next_request_++;
  auto r = std::make_unique<Request>();
  r->id = id.empty() ? concat("req-", number) : std::move(id);
  r->prompt_tokens = std::move(prompt);
  r->params = std::move(params);
  // Requests without a seed get one from the engine's seed and their number: runs repeat.
  r->seed = r->params.seed ? *r->params.seed : philox_block(config_.seed, 0, static_cast<uint64_t>(number)).v[0];
  r->eos_token_ids = model_->spec().config.eos_token_ids;
  r->max_model_len = max_model_len_;
  r->images = std::move(images);
  std::string rid = r->id;
  scheduler_->add(std::move(r));
  times_[rid] = {now_s(), 0.0};
  return rid;
}

bool Engine::abort(const std::string& id) { return scheduler_->abort(id); }

bool Engine::has_unfinished() const { return scheduler_->has_unfinished(); }

Engine::StepInFlight Engine::launch(SchedulerOutput out) {
  StepInFlight step{std::move(out), std::nullopt};
  if (step.out.scheduled.empty()) return step;
  step_buffer_.clear();
  for (const ScheduledRequest& sr : step.out.scheduled) {
    step_buffer_.push_back({sr.request, sr.start_position, sr.num_new_tokens, sr.needs_logits});
    (sr.num_new_tokens == 1 ? stats_.decode_tokens : stats_.prefill_tokens) += sr.num_new_tokens;
  }
  step.ticket = runner_->launch(step_buffer_);
  ++stats_.steps;
  return step;
}

void Engine::complete(StepInFlight& step, std::vector<StepToken>* tokens, std::vector<GenerationResult>& results) {
  using Clock = std::chrono::steady_clock;
  const SchedulerOutput& out = step.out;
  std::vector<int64_t> sampled;
  std::vector<std::optional<TokenLogprobs>> logprobs;
  if (step.ticket) {
    sampled = runner_->collect(*step.ticket);
    logprobs = std::move(step.ticket->logprobs);  // parallel to sampled
  }
  // The sampled entries in update()'s order, with each request's outputs before the update:
  // a token the update kept (not dropped by an abort, nor computed for a request that
  // finished while the step ran) is the one output it adds.
  struct Sampled {
    Request* request;
    size_t outputs_before;
  };
  std::vector<Sampled> entries;
  for (const ScheduledRequest& sr : out.scheduled)
    if (sr.needs_logits) entries.push_back({sr.request, sr.request->output_tokens.size()});
  const auto t1 = Clock::now();
  std::vector<std::unique_ptr<Request>> finished = scheduler_->update(out, sampled);
  stats_.update_s += std::chrono::duration<double>(Clock::now() - t1).count();
  const double t = now_s();
  for (size_t i = 0; i < entries.size(); ++i) {
    Request& r = *entries[i].request;  // alive: update hands back only requests no step names
    if (r.output_tokens.size() != entries[i].outputs_before + 1) continue;
    if (logprobs[i]) r.output_logprobs.push_back(*logprobs[i]);
    auto it = times_.find(r.id);
    if (it != times_.end() && it->second.second == 0.0) it->second.second = t;
    if (tokens) tokens->push_back({r.id, sampled[i], false, logprobs[i]});
  }
  for (auto& r : finished) {
    GenerationResult g;
    g.id = r->id;
    g.prompt_tokens = std::move(r->prompt_tokens);
    g.output_tokens = std::move(r->output_tokens);
    g.output_logprobs = std::move(r->output_logprobs);
    g.finish_reason = r->finish_reason;
    g.num_cached_tokens = r->num_cached_tokens;
    g.num_preemptions = r->num_preemptions;
    auto it = times_.find(g.id);
    if (it != times_.end()) {
      g.arrival_s = it->second.first;
      g.first_token_s = it->second.second;
      times_.erase(it);
    }
    g.finished_s = t;
    if (tokens)
      for (StepToken& st : *tokens)
        if (st.id == g.id) st.finished = true;
    results.push_back(std::move(g));
  }
}

std::vector<GenerationResult> Engine::step(std::vector<StepToken>* tokens) {
  using Clock = std::chrono::steady_clock;
  auto schedule = [&] {
    const auto t0 = Clock::now();
    SchedulerOutput out = scheduler_->schedule();
    stats_.schedule_s += std::chrono::duration<double>(Clock::now() - t0).count();
    return out;
  };
  std::vector<GenerationResult> results;
  if (tokens) tokens->clear();
  if (!in_flight_) {
    SchedulerOutput out = schedule();
    if (out.scheduled.empty()) {
      // Nothing to run (and nothing in flight): aborted waiting requests still come back
      // through update.
      StepInFlight idle{std::move(out), std::nullopt};
      complete(idle, tokens, results);
      FK_CHECK(!results.empty() || !scheduler_->has_unfinished(), "engine: no request could be scheduled (KV cache of ",
               stats_.num_pages, " pages too small for the next request?)");
      return results;
    }
    in_flight_ = launch(std::move(out));
  }
  // Asynchronous: the next step is scheduled and launched before this one's tokens are
  // read, so the device goes on from one to the other. It may schedule nobody (its
  // requests all finish by length when the tokens arrive): it is applied after this one.
  std::optional<StepInFlight> next;
  if (config_.async_scheduling) next = launch(schedule());
  complete(*in_flight_, tokens, results);
  in_flight_.reset();
  if (next && next->ticket)
    in_flight_ = std::move(next);
  else if (next)
    complete(*next, tokens, results);  // nothing ran: it only hands back what finished
  return results;
}

std::vector<GenerationResult> Engine::generate(const std::vector<std::vector<int64_t>>& prompts,
                                               const SamplingParams& params) {
  std::map<std::string, size_t> order;
  for (size_t i = 0; i < prompts.size(); ++i)
    order[add_request(prompts[i], params, concat("generate-", next_request_))] = i;
  std::vector<GenerationResult> results(prompts.size());
  while (has_unfinished())
    for (GenerationResult& g : step()) {
      auto it = order.find(g.id);
      if (it != order.end()) results[it->second] = std::move(g);
    }
  return results;
}

void Engine::check_images(const std::vector<int64_t>& prompt, const std::shared_ptr<RequestImages>& images,
                          const std::string& id) const {
  if (images) {
    FK_CHECK(image_encoder_ != nullptr, "engine: request ", id, " brings images, but model_type '",
             model_->spec().config.model_type, "' reads none");
    FK_CHECK(!images->features, "engine: request ", id, "'s images belong to another request (one RequestImages each)");
    image_encoder_->prepare(*images, prompt);
  } else if (image_encoder_) {
    RequestImages none;  // a text prompt: no image or video tokens (named errors otherwise)
    image_encoder_->prepare(none, prompt);
  }
}

// Teacher-forced sequences as requests of their own for the length of one call: KV blocks
// for every token and, for a recurrent model, a state slot each (under sequence ids below
// the requests', which are >= 0), given back however the call ends.
class Engine::BorrowedSequences {
 public:
  // `images`: the first sequence's image inputs (prefill_logits of a multimodal model).
  BorrowedSequences(Engine& e, const std::vector<std::vector<int64_t>>& sequences, const char* what,
                    std::shared_ptr<RequestImages> images = nullptr)
      : e_(e), reqs_(sequences.size()) {
    FK_CHECK(!e.has_unfinished(), "engine: ", what, " needs an idle engine (requests are running)");
    for (size_t i = 0; i < sequences.size(); ++i) {
      FK_CHECK(!sequences[i].empty() && static_cast<int64_t>(sequences[i].size()) <= e.max_model_len_, "engine: ", what,
               " takes sequences of 1 to max_model_len ", e.max_model_len_, " tokens, got ", sequences[i].size());
      Request& r = reqs_[i];
      r.id = concat("teacher-forced-", i);
      r.prompt_tokens = sequences[i];
      if (i == 0 && images) {
        e.check_images(r.prompt_tokens, images, r.id);
        r.images = std::move(images);
      }
      FK_CHECK(e.blocks_->allocate(r.kv_sequence(), static_cast<int64_t>(r.prompt_tokens.size())),
               "engine: the KV cache has no room for the ", what, " sequences");
      ++with_blocks_;
      if (e.state_pool_) {
        r.state_slot = e.state_pool_->allocate(slot_id(i), e.stream_->get());
        ++with_slots_;
      }
    }
  }
  ~BorrowedSequences() {
    for (size_t i = 0; i < with_blocks_; ++i) e_.blocks_->free(reqs_[i].kv_sequence());
    for (size_t i = 0; i < with_slots_; ++i) e_.state_pool_->free(slot_id(i));
  }
  BorrowedSequences(const BorrowedSequences&) = delete;
  BorrowedSequences& operator=(const BorrowedSequences&) = delete;
  const Request& operator[](size_t i) const { return reqs_[i]; }

 private:
  static runtime::SequenceId slot_id(size_t i) { return -1 - static_cast<runtime::SequenceId>(i); }
  Engine& e_;
  std::vector<Request> reqs_;
  size_t with_blocks_ = 0, with_slots_ = 0;
};

std::vector<float> Engine::prefill_logits(const std::vector<int64_t>& tokens, int64_t last_n,
                                          std::shared_ptr<RequestImages> images) {
  FK_CHECK(!tokens.empty() && static_cast<int64_t>(tokens.size()) <= std::min(max_model_len_, config_.max_num_batched_tokens),
           "engine: prefill_logits takes 1 to min(max_model_len, max_num_batched_tokens) tokens, got ", tokens.size());
  FK_CHECK(last_n >= 1 && last_n <= static_cast<int64_t>(tokens.size()), "engine: prefill_logits: last_n ", last_n,
           " must be in [1, ", tokens.size(), " tokens]");
  const BorrowedSequences reqs(*this, {tokens}, "prefill_logits", std::move(images));
  const StepRequest step{&reqs[0], 0, static_cast<int64_t>(tokens.size()), true};
  std::vector<int64_t> last(static_cast<size_t>(last_n));
  std::iota(last.begin(), last.end(), static_cast<int64_t>(tokens.size()) - last_n);
  return std::move(runner_->prefill_logits({&step, 1}, {&last, 1})[0]);
}

std::vector<std::vector<float>> Engine::prefill_logits_packed(const std::vector<std::vector<int64_t>>& sequences,
                                                              const std::vector<std::vector<int64_t>>& positions) {
  FK_CHECK(!sequences.empty() && sequences.size() == positions.size(), "engine: prefill_logits_packed got ",
           sequences.size(), " sequences and ", positions.size(), " position lists");
  int64_t total = 0;
  for (const auto& s : sequences) total += static_cast<int64_t>(s.size());
  FK_CHECK(total <= config_.max_num_batched_tokens, "engine: prefill_logits_packed: ", total,
           " tokens do not fit one step (max_num_batched_tokens ", config_.max_num_batched_tokens, ")");
  const BorrowedSequences reqs(*this, sequences, "prefill_logits_packed");
  std::vector<StepRequest> steps;
  for (size_t i = 0; i < sequences.size(); ++i)
    steps.push_back({&reqs[i], 0, static_cast<int64_t>(sequences[i].size()), true});
  return runner_->prefill_logits(steps, positions);
}

std::vector<std::vector<float>> Engine::decode_logits_packed(const std::vector<std::vector<int64_t>>& sequences,
                                                             const std::vector<int64_t>& last_n) {
  FK_CHECK(!sequences.empty() && sequences.size() == last_n.size(), "engine: decode_logits_packed got ",
           sequences.size(), " sequences and ", last_n.size(), " position counts");
  int64_t prompt_tokens = 0, steps_needed = 0;
  for (size_t i = 0; i < sequences.size(); ++i) {
    const auto L = static_cast<int64_t>(sequences[i].size());
    FK_CHECK(last_n[i] >= 1 && last_n[i] < L, "engine: decode_logits_packed: last_n ", last_n[i], " of sequence ", i,
             " must be in [1, its ", L, " tokens - 1] (a prompt token comes first)");
    prompt_tokens += L - last_n[i];
    steps_needed = std::max(steps_needed, last_n[i]);
  }
  FK_CHECK(prompt_tokens <= config_.max_num_batched_tokens, "engine: decode_logits_packed: the prompts' ",
           prompt_tokens, " tokens do not fit one step (max_num_batched_tokens ", config_.max_num_batched_tokens, ")");
  FK_CHECK(static_cast<int64_t>(sequences.size()) <= config_.max_num_seqs, "engine: decode_logits_packed: ",
           sequences.size(), " sequences; a step holds at most max_num_seqs ", config_.max_num_seqs);
  const BorrowedSequences reqs(*this, sequences, "decode_logits_packed");
  // The prompts in one prefill, then one decode step per forced token, every sequence that
  // still has one in the same step.
  std::vector<StepRequest> prompts;
  std::vector<std::vector<int64_t>> prompt_last;
  for (size_t i = 0; i < sequences.size(); ++i) {
    const int64_t P = static_cast<int64_t>(sequences[i].size()) - last_n[i];
    prompts.push_back({&reqs[i], 0, P, true});
    prompt_last.push_back({P - 1});
  }
  runner_->prefill_logits(prompts, prompt_last);
  std::vector<std::vector<float>> out(sequences.size());
  for (int64_t j = 0; j < steps_needed; ++j) {
    std::vector<StepRequest> step;
    std::vector<size_t> which;
    for (size_t i = 0; i < sequences.size(); ++i)
      if (j < last_n[i]) {
        step.push_back({&reqs[i], static_cast<int64_t>(sequences[i].size()) - last_n[i] + j, 1, true});
        which.push_back(i);
      }
    const std::vector<std::vector<int64_t>> row0(step.size(), std::vector<int64_t>{0});
    auto rows = runner_->prefill_logits(step, row0);
    for (size_t k = 0; k < which.size(); ++k) out[which[k]].insert(out[which[k]].end(), rows[k].begin(), rows[k].end());
  }
  return out;
}

EngineStats Engine::stats() const {
  EngineStats s = stats_;
  s.graph_replays = runner_->graph_replays();
  s.preemptions = scheduler_->num_preemptions();
  s.free_pages = blocks_->num_free_blocks();
  const ModelRunner::Counters& c = runner_->counters();
  s.decode_steps = c.decode_steps;
  s.mixed_steps = c.mixed_steps;
  s.prefill_steps = c.prefill_steps;
  s.prepare_s = c.prepare_s;
  s.run_s = c.run_s;
  return s;
}

}  // namespace fk::engine
