// Decides, step by step, which requests run and how many of their tokens each computes
// (vLLM-v1 style, without separate prefill and decode phases): every scheduled request
// computes tokens so that num_computed_tokens catches up with total_tokens(), within a token
// budget per step; chunked prefill falls out of the budget. When the KV cache runs out, the
// most recently admitted request is preempted and later recomputed from scratch.
//
// Use: add() requests; then loop { out = schedule(); run the model on out; update(out,
// sampled tokens) } while has_unfinished(). update() hands finished requests back.
// schedule() commits its step at once (computed tokens advance; each request that samples
// gets a pending output token), so with max_steps_in_flight = 2 the next step can be
// scheduled while this one runs on the device (asynchronous scheduling): its decodes
// take their input token from the device, where this step samples it. A request that
// turns out to have finished (EOS, stop token, abort) when the tokens arrive has its work
// in the next step discarded; one that will finish by length is not scheduled again.
// Models with recurrent state (Mamba, gated DeltaNet and their hybrids) also give each
// running request a slot of a RecurrentSlotPool: at admission (a request waits while no
// slot is free), freed when it finishes or is preempted, so that a recomputed request starts
// from a fresh state. Prefix caching cannot serve them yet: a cached block would need the
// recurrent state at its boundary, and it is refused with a named error.
// Not thread-safe.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "runtime/state/kv_cache_manager.h"
#include "runtime/state/recurrent_slot_pool.h"
#include "serving/generate/request.h"

namespace fk::engine {

struct SchedulerConfig {
  int64_t max_num_batched_tokens = 8192;  // token budget per step
  int64_t max_num_seqs = 256;             // running requests at most
  // A prompt longer than the remaining budget is split across steps. Off: it waits for a
  // step with room for all of it (prompts longer than the whole budget are refused by add).
  bool chunked_prefill = true;
  // > 0: a prefill computes at most this many tokens per step, so that one long prompt
  // does not take a whole step from the others. Needs chunked_prefill.
  int64_t long_prefill_token_threshold = 0;
  // Steps scheduled and not yet updated, at most: 1 = synchronous, 2 = the next step is
  // scheduled while one runs.
  int64_t max_steps_in_flight = 1;

  // Throws fk::Error (FK_ERR_INVALID_ARGUMENT) naming the first field out of range.
  void validate() const;
};

struct ScheduledRequest {
  Request* request;
  int64_t num_new_tokens;  // tokens computed this step: positions [start_position, start_position + num_new_tokens)
  int64_t start_position;  // == request->num_computed_tokens when scheduled
  // The step computes the request's last token, so its logits are sampled:
  // start_position + num_new_tokens == request->total_tokens() when it was scheduled.
  bool needs_logits;
};

struct SchedulerOutput {
  std::vector<ScheduledRequest> scheduled;  // running requests first (admission order), then newly admitted
  std::vector<std::string> preempted_ids;   // lost their KV blocks this step (to be recomputed)
  int64_t num_batched_tokens = 0;           // sum of num_new_tokens
  int64_t step = -1;                        // sequence number of a non-empty step (update order)
  bool empty() const { return scheduled.empty() && preempted_ids.empty(); }
};

class Scheduler {
 public:
  // `slots`: the recurrent state pool of a model that keeps one (else null); its slots are
  // zeroed at allocation on `state_stream`, the stream the model's steps run on.
  Scheduler(SchedulerConfig config, KvCacheManager& kv, runtime::RecurrentSlotPool* slots = nullptr,
            void* state_stream = nullptr);

  // Queues a fresh request (FCFS: its arrival number is set here). Throws fk::Error for an
  // empty or duplicate id, bad sampling parameters, an empty prompt or
  // negative token ids, a request that is not fresh (outputs, computed tokens or blocks),
  // a prompt that does not leave room for one output under max_model_len, a prompt over
  // the step budget without chunked prefill, or a request whose worst case (prompt +
  // max_tokens, capped by max_model_len) needs more KV blocks than the cache has: it could
  // never finish.
  void add(std::unique_ptr<Request> r);

  // The next step, committed: its requests' computed tokens advance and each request that
  // samples gets a pending token. At most max_steps_in_flight non-empty steps may await
  // their update().
  SchedulerOutput schedule();

  // Applies the oldest step in flight. sampled_tokens: one per scheduled request with
  // needs_logits, in the order of out.scheduled. Resolves pending tokens into outputs,
  // applies the stop rules (stop_rules.h), caches full blocks, frees finished requests'
  // blocks and returns them (also requests aborted since the last update) once no step in
  // flight still names them; ownership passes to the caller. An empty `out` only hands
  // back what finished.
  std::vector<std::unique_ptr<Request>> update(const SchedulerOutput& out, const std::vector<int64_t>& sampled_tokens);
  int64_t num_steps_in_flight() const { return static_cast<int64_t>(in_flight_.size()); }

  // Finishes the request with reason abort: at once when it is waiting, at the next update
  // when it is running (a token sampled for it meanwhile is dropped); either way update()
  // hands it back. False when the id is unknown or the request has already finished.
  bool abort(const std::string& id);

  // Requests waiting or running, or finished but not yet handed back by update().
  bool has_unfinished() const;
  int64_t num_waiting() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t num_running() const { return static_cast<int64_t>(running_.size()); }
  int64_t num_preemptions() const { return num_preemptions_; }  // total so far
  const SchedulerConfig& config() const { return config_; }

  // Throws fk::Error (FK_ERR_INTERNAL) when a request's state contradicts the queue it is
  // in, it holds fewer blocks than its computed tokens need, a running request holds no
  // state slot (or another's) or a waiting one holds one, or the queues are out of
  // arrival order (running, then waiting, each sorted by arrival). O(requests). Debug builds
  // run it after every schedule() and update(); tests call it too.
  void check_invariants() const;

 private:
  int64_t chunk_size(const Request& r, int64_t remaining, int64_t budget) const;
  void preempt_last_running(SchedulerOutput& out);
  void release_state_slot(Request& r);
  void finish(Request& r, FinishReason why);
  void check_output(const SchedulerOutput& out, const std::vector<int64_t>& sampled_tokens) const;
  bool will_finish_by_length(const Request& r) const;

  SchedulerConfig config_;
  KvCacheManager& kv_;
  runtime::RecurrentSlotPool* slots_;
  void* state_stream_;
  std::unordered_map<std::string, std::unique_ptr<Request>> requests_;  // every request not handed back
  std::deque<Request*> waiting_;           // FCFS; preempted requests go back to the front
  std::vector<Request*> running_;          // in admission order: the last is preempted first
  std::unordered_set<std::string> aborted_;  // running, to finish with reason abort at the next update
  std::vector<Request*> finished_;         // finished outside update(), handed back by the next one
  int64_t next_arrival_ = 0;
  int64_t num_preemptions_ = 0;
  int64_t next_step_ = 0;
  std::deque<int64_t> in_flight_;  // sequence numbers of the steps awaiting update, oldest first
};

}  // namespace fk::engine
