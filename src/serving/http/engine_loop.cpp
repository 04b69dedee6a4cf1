#include "serving/http/engine_loop.h"

#include "fk/status.h"

namespace fk::serve {

bool TokenStream::wait_next(std::vector<int64_t>& out, std::vector<engine::TokenLogprobs>* logprobs) {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return !pending_.empty() || finished_; });
  out.insert(out.end(), pending_.begin(), pending_.end());
  if (logprobs)
    logprobs->insert(logprobs->end(), std::make_move_iterator(pending_logprobs_.begin()),
                     std::make_move_iterator(pending_logprobs_.end()));
  const bool got = !pending_.empty();
  pending_.clear();
  pending_logprobs_.clear();
  return got || !finished_;
}

bool TokenStream::wait_ready(std::chrono::milliseconds timeout) const {
  std::unique_lock lk(mu_);
  return cv_.wait_for(lk, timeout, [&] { return !pending_.empty() || finished_; });
}

engine::FinishReason TokenStream::finish_reason() const {
  std::lock_guard lk(mu_);
  return reason_;
}

std::string TokenStream::error() const {
  std::lock_guard lk(mu_);
  return error_;
}

int64_t TokenStream::num_cached_tokens() const {
  std::lock_guard lk(mu_);
  return cached_;
}

void TokenStream::push(int64_t token, const std::optional<engine::TokenLogprobs>& logprobs) {
  {
    std::lock_guard lk(mu_);
    pending_.push_back(token);
    if (logprobs) pending_logprobs_.push_back(*logprobs);
  }
  cv_.notify_all();
}

void TokenStream::finish(engine::FinishReason why, int64_t cached, std::string error) {
  {
    std::lock_guard lk(mu_);
    finished_ = true;
    reason_ = why;
    cached_ = cached;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

EngineLoop::EngineLoop(std::unique_ptr<engine::Engine> engine) : engine_(std::move(engine)) {
  const engine::EngineStats s = engine_->stats();  // before the loop thread owns the engine
  kv_capacity_tokens_ = s.num_pages * s.page_size;
  thread_ = std::thread([this] { run(); });
}

EngineLoop::~EngineLoop() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  for (auto& [id, s] : live_) s->finish(engine::FinishReason::abort, 0, "server shutting down");
  for (auto& sub : queue_) sub.stream->finish(engine::FinishReason::abort, 0, "server shutting down");
}

std::shared_ptr<TokenStream> EngineLoop::submit(const std::string& id, std::vector<int64_t> prompt,
                                                const engine::SamplingParams& params,
                                                std::shared_ptr<engine::RequestImages> images) {
  params.validate();
  const int64_t V = engine_->spec().config.vocab_size;
  params.validate_token_ids(V);
  FK_CHECK(!prompt.empty(), "the prompt is empty");
  for (size_t i = 0; i < prompt.size(); ++i)
    FK_CHECK(prompt[i] >= 0 && prompt[i] < V, "prompt token ", i, " is ", prompt[i], ", outside the vocabulary [0, ",
             V, ")");
  FK_CHECK(static_cast<int64_t>(prompt.size()) < engine_->max_model_len(), "the prompt has ", prompt.size(),
           " tokens; this model's context is ", engine_->max_model_len(), " tokens, and one must remain for output");
  auto stream = std::make_shared<TokenStream>();
  {
    std::lock_guard lk(mu_);
    if (!failure_.empty()) FK_FAIL(FK_ERR_INTERNAL, "the engine stopped after an error: ", failure_);
    if (shutting_down_) FK_FAIL(FK_ERR_INTERNAL, "the server is shutting down");
    stats_.queued++;
    stats_.prompt_tokens += static_cast<int64_t>(prompt.size());
    queue_.push_back({id, std::move(prompt), params, stream, std::move(images)});
  }
  cv_.notify_all();
  return stream;
}

void EngineLoop::abort(const std::string& id, engine::FinishReason counted_as) {
  {
    std::lock_guard lk(mu_);
    aborts_.emplace_back(id, counted_as);
  }
  cv_.notify_all();
}

int64_t EngineLoop::abort_all(const std::string& reason) {
  int64_t n = 0;
  {
    std::lock_guard lk(mu_);
    shutting_down_ = true;
    abort_all_reason_ = reason.empty() ? "aborted" : reason;
    n = stats_.running + stats_.queued;
  }
  cv_.notify_all();
  return n;
}

void EngineLoop::begin_shutdown() {
  std::lock_guard lk(mu_);
  shutting_down_ = true;
}

bool EngineLoop::shutting_down() const {
  std::lock_guard lk(mu_);
  return shutting_down_;
}

std::string EngineLoop::failure() const {
  std::lock_guard lk(mu_);
  return failure_;
}

LoopStats EngineLoop::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

void EngineLoop::run() {
  using Clock = std::chrono::steady_clock;
  std::vector<engine::StepToken> tokens;
  while (true) {
    std::deque<Submission> subs;
    std::vector<std::pair<std::string, engine::FinishReason>> aborts;
    std::string abort_all;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] {
        return stop_ || !queue_.empty() || !aborts_.empty() || !abort_all_reason_.empty() || engine_->has_unfinished();
      });
      if (stop_) return;
      subs.swap(queue_);
      aborts.swap(aborts_);
      abort_all.swap(abort_all_reason_);
      stats_.queued -= static_cast<int64_t>(subs.size());
      stats_.running += static_cast<int64_t>(subs.size());
    }
    const auto t_work = Clock::now();
    for (Submission& s : subs) {
      try {
        engine_->add_request(std::move(s.prompt), s.params, s.id, std::move(s.images));
        live_[s.id] = s.stream;
      } catch (const std::exception& e) {  // e.g. a duplicate id: that request fails alone
        s.stream->finish(engine::FinishReason::abort, 0, e.what());
        std::lock_guard lk(mu_);
        stats_.running--;
      }
    }
    for (const auto& [id, counted_as] : aborts)
      if (engine_->abort(id) && counted_as != engine::FinishReason::abort) counted_as_[id] = counted_as;
    if (!abort_all.empty()) {
      // Every request ends now, with the reason as its error; the engine frees them at its
      // next step (their results then find no stream and are dropped).
      for (auto& [id, s] : live_) {
        engine_->abort(id);
        s->finish(engine::FinishReason::abort, 0, abort_all);
      }
      std::lock_guard lk(mu_);
      const auto n = static_cast<int64_t>(live_.size());
      stats_.running -= n;
      stats_.requests_finished += n;
      stats_.finished_by_reason[static_cast<size_t>(engine::FinishReason::abort)] += n;
      live_.clear();
    }
    if (!engine_->has_unfinished()) {
      std::lock_guard lk(mu_);
      stats_.loop_work_s += std::chrono::duration<double>(Clock::now() - t_work).count();
      continue;
    }
    std::vector<engine::GenerationResult> done;
    const auto t_step = Clock::now();
    try {
      done = engine_->step(&tokens);
    } catch (const std::exception& e) {
      // The engine cannot go on (a device fault): fail every live and queued request, and
      // every later submission (the HTTP side keeps answering, with errors). The failure is
      // recorded before any request hears of it: a client answered with the error that
      // sends again must get the 503 of a failed engine, not a request queued for nobody.
      std::vector<std::shared_ptr<TokenStream>> failed;
      {
        std::lock_guard lk(mu_);
        failure_ = e.what();
        stop_ = true;
        for (auto& [id, s] : live_) failed.push_back(s);
        for (Submission& q : queue_) failed.push_back(q.stream);
        stats_.running -= static_cast<int64_t>(live_.size());
        stats_.queued = 0;
        queue_.clear();
        live_.clear();
      }
      for (const auto& s : failed) s->finish(engine::FinishReason::abort, 0, e.what());
      return;
    }
    const auto t_stepped = Clock::now();
    for (const engine::StepToken& t : tokens) {
      auto it = live_.find(t.id);
      if (it != live_.end()) it->second->push(t.token, t.logprobs);
    }
    const engine::EngineStats es = engine_->stats();
    std::lock_guard lk(mu_);
    stats_.kv_usage = es.num_pages > 0 ? 1.0 - static_cast<double>(es.free_pages) / static_cast<double>(es.num_pages) : 0;
    stats_.generation_tokens += static_cast<int64_t>(tokens.size());
    for (const engine::GenerationResult& g : done) {
      engine::FinishReason counted = g.finish_reason;
      if (auto c = counted_as_.find(g.id); c != counted_as_.end()) {
        if (counted == engine::FinishReason::abort) counted = c->second;
        counted_as_.erase(c);
      }
      auto it = live_.find(g.id);
      if (it == live_.end()) continue;
      it->second->finish(g.finish_reason, g.num_cached_tokens);
      live_.erase(it);
      stats_.running--;
      stats_.requests_finished++;
      stats_.finished_by_reason[static_cast<size_t>(counted)]++;
    }
    stats_.engine = es;
    const auto t_end = Clock::now();
    stats_.step_s += std::chrono::duration<double>(t_stepped - t_step).count();
    stats_.loop_work_s += std::chrono::duration<double>((t_step - t_work) + (t_end - t_stepped)).count();
  }
}

}  // namespace fk::serve
