// Turns one scheduled step into a model call: packs the requests' tokens, positions, cache
// slots and page tables into persistent buffers on the model's device, plans attention,
// runs the forward pass (replaying a captured CUDA graph for decode steps whose batch fits
// a captured size), samples one token per request that needs one, and returns them.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "runtime/device.h"
#include "serving/generate/forward_batch.h"
#include "runtime/state/kv_cache.h"
#include "models/llm/decoder_model.h"
#include "serving/generate/request.h"
#include "serving/generate/request_images.h"
#include "runtime/step_arena.h"

namespace fk::engine {

// One request's part of a step: its tokens [start, start + count) are computed; when
// needs_logits, the step samples its next token.
struct StepRequest {
  const Request* request = nullptr;
  int64_t start = 0;
  int64_t count = 0;
  bool needs_logits = false;
};

struct RunnerConfig {
  int64_t max_tokens = 8192;        // tokens per step at most
  int64_t max_seqs = 256;           // requests per step at most
  int64_t max_pages_per_seq = 0;    // page-table length at most (max_model_len / page_size, rounded up)
  bool cuda_graphs = true;          // capture decode steps (CUDA backend only)
  int32_t decode_graph_grid = 0;    // 0: per step; 1..3: always this class (EngineConfig)
  std::vector<int64_t> graph_batch_sizes;  // empty: 1, 2, 4, 8, then multiples of 16 up to max_seqs
};

class ModelRunner {
 public:
  // The KV cache must hold one page more than the block pool hands out: the last page
  // (kv.num_pages() - 1) takes the padding sequences of captured decode graphs.
  ModelRunner(DecoderModel& model, KvCache& kv, RunnerConfig config, void* stream);

  // Runs the step; returns the sampled tokens of the requests with needs_logits, in order
  // (launch + collect; a step with logprobs requests gets them from launch's ticket).
  std::vector<int64_t> execute(std::span<const StepRequest> step);

  // The two halves of execute, for asynchronous scheduling: launch() issues the step to the
  // device and returns at once (on CUDA); collect() waits for its sampled tokens. One step
  // may be in flight while the next is launched: a request whose input is a token still
  // pending (Request::num_pending_tokens) gets it on the device from the previous launch's
  // sampler output, so launches must come in scheduling order, each collected once, in order.
  struct Ticket {
    int slot = 0;                      // host buffer the rows are copied into
    std::vector<int64_t> row_of;       // per request of the step: its row (-1: none)
    // Per token, for requests that asked (model_runner_logprobs.cpp): a step with such
    // requests waits for the device inside launch().
    std::vector<std::optional<TokenLogprobs>> logprobs;
    std::chrono::steady_clock::time_point launched;  // when its work was issued (Counters::run_s)
  };
  Ticket launch(std::span<const StepRequest> step);
  std::vector<int64_t> collect(const Ticket& ticket);

  // Teacher forcing: the requests' tokens [start, start + count) computed in one step,
  // packed as a step packs them (a decode step when each has one token; their KV blocks and
  // state slots must cover them, and hold the tokens before `start`); returns the logits
  // at each request's `positions[i]` (indices into its `count` tokens, increasing) as floats, row-major
  // [positions[i].size(), V]. No sampling, no graph.
  std::vector<std::vector<float>> prefill_logits(std::span<const StepRequest> requests,
                                                 std::span<const std::vector<int64_t>> positions);

  // Captures decode graphs for every configured batch size (after the weights and the
  // cache exist; a no-op on the CPU backend or with cuda_graphs off).
  void capture_graphs();
  const std::vector<int64_t>& graph_batch_sizes() const { return graph_sizes_; }
  int64_t graph_replays() const { return graph_replays_; }
  // Where a step's time goes, summed over steps: host work before the launch (packing,
  // uploads, attention plans) and from the launch to the sampled tokens on the host (with
  // asynchronous scheduling the latter of consecutive steps overlap).
  struct Counters {
    int64_t decode_steps = 0, mixed_steps = 0, prefill_steps = 0;  // mixed: decode part split off
    double prepare_s = 0, run_s = 0;
  };
  const Counters& counters() const { return counters_; }
  int64_t padding_page() const { return kv_.num_pages() - 1; }
  // Models that read images (Qwen3-VL): the vision side that encodes a request's images at
  // its first step with image tokens. Not owned; null for text-only models.
  void set_image_encoder(ImageEncoder* encoder) { image_encoder_ = encoder; }

 private:
  // Host-side arrays of one step, written by pack() and copied to the device by upload().
  struct HostBatch {
    std::vector<int32_t> input_ids, qo_indptr, kv_indptr, kv_indices, kv_last_page_len, logits_indices;
    std::vector<int32_t> prefill_qo_indptr, prefill_kv_indptr;  // a split mixed step's prefill part
    int64_t num_decode_seqs = 0;
    std::vector<int64_t> positions, slot_mapping;
    std::vector<float> temperature, top_p, min_p;
    std::vector<int32_t> top_k;
    std::vector<int64_t> seed, offset;
    // Pending input tokens: input_ids[fill_dst[j]] = the previous launch's sampled row
    // fill_src[j]; padded with -1 to one entry per sequence (a fixed arena layout).
    std::vector<int32_t> fill_dst, fill_src;
    int64_t num_fills = 0;
    // Models with recurrent state: per sequence its slot and whether it continues from it.
    std::vector<int32_t> state_slots, has_initial_state;
    std::vector<uint8_t> has_initial_state_bool;
    // M-RoPE models, a step computing tokens of an image prompt: [3, T] positions (row-major);
    // empty otherwise. The image requests' token ranges in the step, where they are packed.
    std::vector<int64_t> mrope;
    struct ImageSpan {
      RequestImages* images = nullptr;
      int64_t packed = 0, start = 0, count = 0;
    };
    std::vector<ImageSpan> image_spans;
    void clear();
  };
  // The step's image features (encoding a request's images when it first needs them) into
  // the batch; the features of requests whose image tokens are all computed are released
  // from their requests (the step keeps them until its slot is reused).
  void attach_images(ForwardBatch& batch, int slot);
  // padded_seqs > 0: a captured graph's batch size (padding sequences appended, one logit row each).
  // `order` (empty: as given) is the order in which the step's requests are packed; with
  // split_decodes, the leading single-token requests form the step's decode part.
  void pack(std::span<const StepRequest> step, int64_t padded_seqs, std::span<const size_t> order = {},
            bool split_decodes = false);
  ForwardBatch upload(bool decode_only);
  void sample(const TensorView& logits, int slot);  // one token per row, copied to sampled_host_[slot]
  // The step's logit rows after the requests' logit_bias, min_tokens, bad_words and penalties
  // (model_runner_logits_processors.cpp), or `logits` itself when no request of the step uses
  // them. `graph`: the rows are the packed (padded) sequences.
  TensorView apply_logits_processors(std::span<const StepRequest> step, const TensorView& logits, bool graph);
  struct LogitsProcessorBuffers;
  std::shared_ptr<LogitsProcessorBuffers> processors_;  // made at the first step that needs them
  void fill_pending_inputs();                        // this step's pending input tokens (pending_tokens.h)
  int64_t graph_size_for(int64_t seqs) const;  // 0: no captured size fits
  // The decode attention's graph grid class for the packed (padded) batch (fk/ops/attention.h).
  int32_t graph_grid_for_packed_batch() const;
  // The grid classes decode graphs are captured for: all, or the one the config fixes.
  std::pair<int32_t, int32_t> captured_grids() const;
  void wait() const;                            // the stream's work done (CUDA backend)
  // compute_logprobs on the logit rows whose requests ask for logprobs; nothing when none do.
  // row_of[i]: the logits row of step[i] (-1 when it has none).
  std::vector<std::optional<TokenLogprobs>> compute_logprobs(std::span<const StepRequest> step,
                                                             const TensorView& logits,
                                                             const std::vector<int64_t>& row_of);

  DecoderModel& model_;
  KvCache& kv_;
  RunnerConfig config_;
  void* stream_;
  DeviceType backend_;
  HostBatch host_;
  std::vector<size_t> order_;  // the step's packing order (empty: as scheduled)
  // The step's arrays on the device: staged and uploaded in one copy (step_arena.h);
  // upload() places them and records where.
  StepArena arena_;
  struct StepViews {
    TensorView input_ids, positions, slot_mapping, logits_indices, qo_indptr, kv_indptr, kv_last_page_len,
        prefill_qo_indptr, prefill_kv_indptr, temperature, top_k, top_p, min_p, seed, offset, fill_dst, fill_src,
        state_slots, has_initial_state, has_initial_state_bool, kv_indices;
  } views_;
  Tensor qo_indptr_host_, kv_indptr_host_, kv_last_page_len_host_;  // the plan's host mirrors
  Tensor prefill_qo_indptr_host_, prefill_kv_indptr_host_;
  Tensor state_slots_host_;  // the host mirror of the batch's state slots (recurrent models)
  bool recurrent_ = false;   // the model keeps recurrent state: the batch carries its slots
  Tensor sampled_;  // [max_seqs] i64: the sampler's output
  // Its copies on the host, alternating between launches so that a step's tokens stay
  // readable while the next step samples; each with the event of its copy.
  Tensor sampled_host_[2];
  std::unique_ptr<StreamEvent> sampled_ready_[2];
  int next_slot_ = 0;
  // Marks the end of a launch's uploads (the arena and the attention plans copy from host
  // buffers the next launch rewrites): the next launch waits for it before writing them.
  std::unique_ptr<StreamEvent> inputs_consumed_;
  std::map<const Request*, int64_t> last_rows_;  // the previous launch's sampled row per request
  std::vector<int64_t> graph_sizes_;
  // One graph per (batch size, decode attention grid class): a class fixes the attention's
  // split-KV grid, and short contexts want a smaller one than long contexts.
  std::map<std::pair<int64_t, int32_t>, CudaGraph> graphs_;
  int64_t sm_count_ = 0;  // the device's, for the grid class
  int64_t graph_replays_ = 0;
  Counters counters_;
  Tensor logprob_, topk_ids_, topk_logprobs_;  // [max_seqs], [max_seqs * 20]; allocated at the first use
  ImageEncoder* image_encoder_ = nullptr;
  bool mrope_ = false;           // the model rotates image prompts by M-RoPE positions
  Tensor mrope_host_, mrope_dev_;  // [3, max_tokens] i64: a step's M-RoPE positions (the same tensor on the CPU)
  // Per ticket slot, the image features its step reads (released when the slot is reused,
  // after that step was collected).
  std::unique_ptr<StepImageFeatures> step_images_[2];
};

}  // namespace fk::engine
