#include "serving/generate/scheduler.h"

#include <algorithm>

#include "serving/generate/stop_rules.h"
#include "fk/status.h"

namespace fk::engine {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

void SchedulerConfig::validate() const {
  FK_CHECK(max_num_batched_tokens >= 1, "max_num_batched_tokens must be >= 1, got ", max_num_batched_tokens);
  FK_CHECK(max_num_seqs >= 1, "max_num_seqs must be >= 1, got ", max_num_seqs);
  FK_CHECK(long_prefill_token_threshold >= 0, "long_prefill_token_threshold must be >= 0 (0 = off), got ",
           long_prefill_token_threshold);
  FK_CHECK(long_prefill_token_threshold == 0 || chunked_prefill,
           "long_prefill_token_threshold splits prefills, so it needs chunked_prefill");
  FK_CHECK(max_steps_in_flight == 1 || max_steps_in_flight == 2,
           "max_steps_in_flight must be 1 (synchronous) or 2 (asynchronous scheduling), got ", max_steps_in_flight);
}

Scheduler::Scheduler(SchedulerConfig config, KvCacheManager& kv, runtime::RecurrentSlotPool* slots,
                     void* state_stream)
    : config_(config), kv_(kv), slots_(slots), state_stream_(state_stream) {
  config_.validate();
  FK_CHECK(slots_ == nullptr || !kv_.prefix_caching(),
           "prefix caching of a model with recurrent state is not supported (a cached block would need the "
           "state at its boundary): turn prefix caching off");
  FK_CHECK(slots_ == nullptr || slots_->num_used() == 0, "the recurrent state pool given to the scheduler has ",
           slots_ == nullptr ? 0 : slots_->num_used(), " slots in use; it needs all of them free");
}

// Gives r's recurrent state slot back (models with recurrent state).
void Scheduler::release_state_slot(Request& r) {
  if (slots_ == nullptr || r.state_slot < 0) return;
  slots_->free(r.arrival);
  r.state_slot = -1;
}

void Scheduler::add(std::unique_ptr<Request> r) {
  FK_CHECK(r != nullptr, "add() needs a request");
  FK_CHECK(!r->id.empty(), "request id must not be empty");
  FK_CHECK(!requests_.contains(r->id), "request id '", r->id, "' is already in the scheduler");
  try {
    r->params.validate();
  } catch (const Error& e) {
    FK_FAIL(e.code(), "request ", r->id, ": ", e.what());
  }
  const auto prompt_len = static_cast<int64_t>(r->prompt_tokens.size());
  FK_CHECK(prompt_len >= 1, "request ", r->id, " has an empty prompt");
  for (int64_t t : r->prompt_tokens) FK_CHECK(t >= 0, "request ", r->id, ": prompt token ids must be >= 0, got ", t);
  for (int64_t t : r->eos_token_ids) FK_CHECK(t >= 0, "request ", r->id, ": eos_token_ids must be >= 0, got ", t);
  FK_CHECK(r->state == RequestState::waiting && r->finish_reason == FinishReason::none && r->output_tokens.empty() &&
               r->num_computed_tokens == 0 && r->block_ids.empty() && r->state_slot == -1,
           "request ", r->id, " is not fresh: it has outputs, computed tokens, blocks, a state slot or a final state");
  FK_CHECK(r->max_model_len >= 0, "request ", r->id, ": max_model_len must be >= 0 (0 = no limit), got ",
           r->max_model_len);
  FK_CHECK(r->max_model_len == 0 || prompt_len < r->max_model_len, "request ", r->id, ": prompt of ", prompt_len,
           " tokens leaves no room for an output under max_model_len ", r->max_model_len);
  FK_CHECK(config_.chunked_prefill || prompt_len <= config_.max_num_batched_tokens, "request ", r->id,
           ": prompt of ", prompt_len, " tokens exceeds max_num_batched_tokens ", config_.max_num_batched_tokens,
           " and chunked prefill is off");
  // A request holds K/V for all its tokens but the last sampled one. If its worst case does
  // not fit the whole cache, it would preempt itself forever.
  const int64_t capacity = kv_.num_blocks() * kv_.block_size();
  int64_t worst = prompt_len - 1 + std::min(r->params.max_tokens, capacity + 1);
  if (r->max_model_len > 0) worst = std::min(worst, r->max_model_len - 1);
  FK_CHECK(worst <= capacity, "request ", r->id, " may need K/V for ", worst, " tokens (prompt ", prompt_len,
           " + max_tokens ", r->params.max_tokens, " - 1", r->max_model_len > 0 ? ", capped by max_model_len" : "",
           "), more than the whole cache holds (", kv_.num_blocks(), " blocks of ", kv_.block_size(),
           " tokens); lower max_tokens or set max_model_len");

  r->arrival = next_arrival_++;
  r->num_cached_tokens = 0;
  Request* raw = r.get();
  requests_.emplace(raw->id, std::move(r));
  waiting_.push_back(raw);
}

// How many of r's `remaining` tokens to compute this step.
int64_t Scheduler::chunk_size(const Request& r, int64_t remaining, int64_t budget) const {
  int64_t n = std::min(remaining, budget);
  if (config_.long_prefill_token_threshold > 0) n = std::min(n, config_.long_prefill_token_threshold);
  return n;
}

// Recompute preemption: the request loses its blocks and will compute all its tokens
// (prompt and the outputs it already has) again. It goes back to the front of the queue
// so that it resumes before requests that arrived after it.
void Scheduler::preempt_last_running(SchedulerOutput& out) {
  Request* victim = running_.back();
  running_.pop_back();
  kv_.free(victim->kv_sequence());
  release_state_slot(*victim);
  victim->num_computed_tokens = 0;
  victim->num_cached_tokens = 0;
  victim->state = RequestState::waiting;
  ++victim->num_preemptions;
  ++num_preemptions_;
  waiting_.push_front(victim);
  out.preempted_ids.push_back(victim->id);
}

// Its pending tokens already take it to max_tokens or max_model_len: it finishes (by
// length) when they arrive, so computing more for it would be wasted.
bool Scheduler::will_finish_by_length(const Request& r) const {
  if (r.num_pending_tokens == 0) return false;
  if (static_cast<int64_t>(r.output_tokens.size()) + r.num_pending_tokens >= r.params.max_tokens) return true;
  return r.max_model_len > 0 && r.total_tokens() >= r.max_model_len;
}

SchedulerOutput Scheduler::schedule() {
  FK_CHECK(num_steps_in_flight() < config_.max_steps_in_flight,
           num_steps_in_flight() == 1 ? "schedule() called again before update() applied the previous step"
                                      : "schedule(): too many steps in flight");
  SchedulerOutput out;
  int64_t budget = config_.max_num_batched_tokens;

  // 1. Running requests first, in admission order: decodes and unfinished chunked prefills
  // are not starved by new arrivals. Victims come from the back of running_, i.e. from
  // requests not yet scheduled this step.
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Request& r = *running_[i];
    if (aborted_.contains(r.id) || will_finish_by_length(r)) {  // finished by an update to come
      ++i;
      continue;
    }
    const int64_t start = r.num_computed_tokens;
    const int64_t n = chunk_size(r, r.total_tokens() - start, budget);
    bool allocated = kv_.allocate(r.kv_sequence(), n);
    while (!allocated) {
      const bool self = running_.back() == &r;
      preempt_last_running(out);
      if (self) break;
      allocated = kv_.allocate(r.kv_sequence(), n);
    }
    if (!allocated) break;  // r preempted itself: nobody after it can get blocks either
    out.scheduled.push_back({&r, n, start, start + n == r.total_tokens()});
    budget -= n;
    ++i;
  }

  // 2. Then waiting requests, FCFS. Not in a step that had to preempt: the cache is full, and
  // a victim readmitted at once would only thrash.
  if (out.preempted_ids.empty()) {
    while (!waiting_.empty() && budget > 0 && num_running() < config_.max_num_seqs) {
      Request& r = *waiting_.front();
      // Preempted while a step in flight samples for it: its prompt-to-be is not all known.
      if (r.num_pending_tokens > 0) break;
      if (slots_ != nullptr && slots_->num_free() == 0) break;  // its state needs a slot
      const CachedPrefix prefix = kv_.find_cached_prefix(r.tokens());
      const int64_t remaining = r.total_tokens() - prefix.num_tokens;
      // Without chunked prefill a request waits for a step with room for all of it, unless
      // it could never fit one step (a preempted request with many outputs): that one is split.
      if (!config_.chunked_prefill && remaining > budget && remaining <= config_.max_num_batched_tokens) break;
      const int64_t n = chunk_size(r, remaining, budget);
      if (!kv_.allocate(r.kv_sequence(), n, &prefix)) break;  // FCFS: nobody overtakes the head
      if (slots_ != nullptr) r.state_slot = slots_->allocate(r.arrival, state_stream_);
      waiting_.pop_front();
      r.state = RequestState::running;
      running_.push_back(&r);
      out.scheduled.push_back({&r, n, r.num_computed_tokens, r.num_computed_tokens + n == r.total_tokens()});
      budget -= n;
    }
  }

  out.num_batched_tokens = config_.max_num_batched_tokens - budget;
  // Commit: the step's tokens count as computed, and every sample it draws is pending.
  for (const ScheduledRequest& sr : out.scheduled) {
    Request& r = *sr.request;
    r.num_computed_tokens += sr.num_new_tokens;
    r.num_pending_tokens += sr.needs_logits;
    ++r.num_steps_in_flight;
  }
  if (!out.empty()) {
    out.step = next_step_++;
    in_flight_.push_back(out.step);
  }
#ifndef NDEBUG
  check_invariants();
#endif
  return out;
}

void Scheduler::check_output(const SchedulerOutput& out, const std::vector<int64_t>& sampled_tokens) const {
  if (out.empty()) {
    FK_CHECK(sampled_tokens.empty(), "update() got ", sampled_tokens.size(), " sampled tokens for an empty step");
    return;
  }
  FK_CHECK(!in_flight_.empty() && out.step == in_flight_.front(),
           in_flight_.empty() || out.step < in_flight_.front()
               ? "update() got a step that is not pending (applied twice?)"
               : "update() got a step out of order (steps are applied oldest first)");
  size_t num_logits = 0;
  for (const ScheduledRequest& s : out.scheduled) {
    FK_CHECK(s.request != nullptr, "scheduled entry without a request");
    const auto it = requests_.find(s.request->id);
    const Request& r = *s.request;
    // A request preempted or finished since the step was scheduled is skipped by the
    // update; one still running has computed at least the step's tokens.
    FK_CHECK(it != requests_.end() && it->second.get() == s.request && r.num_steps_in_flight >= 1 &&
                 s.num_new_tokens >= 1 && r.num_pending_tokens >= (s.needs_logits ? 1 : 0) &&
                 (r.state != RequestState::running || s.start_position + s.num_new_tokens <= r.num_computed_tokens),
             "scheduled entry for request '", r.id, "' does not match the scheduler's state");
    num_logits += s.needs_logits;
  }
  FK_CHECK(sampled_tokens.size() == num_logits, "update() got ", sampled_tokens.size(), " sampled tokens for ",
           num_logits, " requests that needed logits");
  for (int64_t t : sampled_tokens) FK_CHECK(t >= 0, "sampled token ids must be >= 0, got ", t);
}

void Scheduler::finish(Request& r, FinishReason why) {
  kv_.free(r.kv_sequence());
  release_state_slot(r);
  r.state = RequestState::finished;
  r.finish_reason = why;
  finished_.push_back(&r);
}

std::vector<std::unique_ptr<Request>> Scheduler::update(const SchedulerOutput& out,
                                                         const std::vector<int64_t>& sampled_tokens) {
  check_output(out, sampled_tokens);  // all checks first: bad input changes nothing
  if (!out.empty()) in_flight_.pop_front();

  size_t next_token = 0;
  for (const ScheduledRequest& s : out.scheduled) {
    Request& r = *s.request;
    --r.num_steps_in_flight;
    const int64_t token = s.needs_logits ? sampled_tokens[next_token++] : Request::kPendingToken;
    if (r.finished()) continue;  // finished while the step ran: its work is discarded
    FinishReason why = FinishReason::none;
    if (s.needs_logits) {
      // The oldest pending token is this step's: steps are applied in order.
      --r.num_pending_tokens;
      if (!aborted_.contains(r.id)) {
        r.output_tokens.push_back(token);
        why = stop_reason(r);
      }
    }
    // Before a finished request frees them: others may reuse them. A request preempted
    // since (waiting) has no blocks.
    if (r.state == RequestState::running) kv_.cache_full_blocks(r.kv_sequence());
    if (why != FinishReason::none) finish(r, why);
  }
  for (const std::string& id : aborted_) {
    Request& r = *requests_.at(id);
    if (r.state != RequestState::finished) finish(r, FinishReason::abort);
  }
  aborted_.clear();

  const auto is_finished = [](const Request* r) { return r->finished(); };
  running_.erase(std::remove_if(running_.begin(), running_.end(), is_finished), running_.end());
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), is_finished), waiting_.end());
  // Hand back what finished, except requests a step in flight still names: they stay
  // until that step's update.
  std::vector<std::unique_ptr<Request>> done;
  std::vector<Request*> kept;
  for (Request* r : finished_) {
    if (r->num_steps_in_flight > 0) {
      kept.push_back(r);
      continue;
    }
    auto node = requests_.extract(r->id);
    done.push_back(std::move(node.mapped()));
  }
  finished_ = std::move(kept);
#ifndef NDEBUG
  check_invariants();
#endif
  return done;
}

bool Scheduler::abort(const std::string& id) {
  const auto it = requests_.find(id);
  if (it == requests_.end() || it->second->finished()) return false;
  Request& r = *it->second;
  if (r.state == RequestState::waiting) {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &r));
    finish(r, FinishReason::abort);
  } else {
    aborted_.insert(id);
  }
  return true;
}

bool Scheduler::has_unfinished() const { return !requests_.empty(); }

void Scheduler::check_invariants() const {
  const int64_t bs = kv_.block_size();
  auto fail = [](const Request& r, const char* what) {
    FK_FAIL(FK_ERR_INTERNAL, "scheduler: request ", r.id, " ", what);
  };
  if (num_running() > config_.max_num_seqs)
    FK_FAIL(FK_ERR_INTERNAL, "scheduler: ", num_running(), " running requests, max_num_seqs ", config_.max_num_seqs);
  // FCFS: admission takes the oldest waiting request and preemption the newest running
  // one, so both lists stay sorted by arrival and every running request arrived before
  // every waiting one.
  int64_t last_arrival = -1;
  for (const Request* r : running_) {
    if (r->arrival <= last_arrival) fail(*r, "breaks the arrival order of running then waiting requests");
    last_arrival = r->arrival;
    if (r->state != RequestState::running) fail(*r, "is in the running list but not running");
    if (static_cast<int64_t>(r->block_ids.size()) < ceil_div(r->num_computed_tokens, bs))
      fail(*r, "holds fewer blocks than its computed tokens need");
    if (r->num_computed_tokens >= r->total_tokens() && !aborted_.contains(r->id))
      fail(*r, "is running with nothing left to compute");
    if (r->num_pending_tokens > num_steps_in_flight() || r->num_steps_in_flight > num_steps_in_flight())
      fail(*r, "has more pending tokens or steps in flight than there are steps in flight");
    if (slots_ != nullptr && (r->state_slot < 0 || !slots_->holds(r->arrival) || slots_->slot_of(r->arrival) != r->state_slot))
      fail(*r, "is running without its own recurrent state slot");
  }
  for (const Request* r : waiting_) {
    if (r->arrival <= last_arrival) fail(*r, "breaks the arrival order of running then waiting requests");
    last_arrival = r->arrival;
    if (r->state != RequestState::waiting) fail(*r, "is in the waiting queue but not waiting");
    if (!r->block_ids.empty() || r->num_computed_tokens != 0) fail(*r, "is waiting with blocks or computed tokens");
    if (r->state_slot >= 0) fail(*r, "is waiting with a recurrent state slot");
    if (r->num_pending_tokens > num_steps_in_flight()) fail(*r, "is waiting for more tokens than steps in flight");
  }
  for (const Request* r : finished_)
    if (!r->finished() || !r->block_ids.empty() || r->state_slot >= 0)
      fail(*r, "is to be handed back but not finished and freed");
  if (slots_ != nullptr && slots_->num_used() != num_running())
    FK_FAIL(FK_ERR_INTERNAL, "scheduler: ", slots_->num_used(), " recurrent state slots held by ", num_running(),
            " running requests");
  if (requests_.size() != running_.size() + waiting_.size() + finished_.size())
    FK_FAIL(FK_ERR_INTERNAL, "scheduler: ", requests_.size(), " requests but ", running_.size(), " running, ",
            waiting_.size(), " waiting, ", finished_.size(), " finished");
}

}  // namespace fk::engine
