// The step scheduler (src/serving/generate/scheduler.h): token budget, chunked prefill, decode-first
// order, max_num_seqs, recompute preemption, stop rules, abort, prefix-cache admission, the
// errors, and a randomised simulation whose fake model reads its context back from the KV
// blocks the scheduler gave out: every request must produce exactly what it produces when
// run alone, however it was batched, chunked, preempted or served from the prefix cache.
#include "serving/generate/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "serving/generate/stop_rules.h"
#include "fk/status.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

std::unique_ptr<Request> make_request(std::string id, std::vector<int64_t> prompt, int64_t max_tokens = 16) {
  auto r = std::make_unique<Request>();
  r->id = std::move(id);
  r->prompt_tokens = std::move(prompt);
  r->params.max_tokens = max_tokens;
  return r;
}

std::vector<int64_t> tokens(int64_t n, int64_t first = 1) {
  std::vector<int64_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = first + i % 50;
  return t;
}

template <class F>
void expect_error(F&& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no fk::Error; expected one mentioning '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The fake model's next token: a function of the request's seed and its whole context.
int64_t next_token(uint64_t seed, const std::vector<int64_t>& context, int64_t vocab) {
  uint64_t h = mix(seed);
  for (int64_t t : context) h = mix(h ^ static_cast<uint64_t>(t));
  return static_cast<int64_t>(h % static_cast<uint64_t>(vocab));
}

// A "model" whose KV cache is one token id per slot: computing a token writes it into its
// slot, and sampling reads the whole context back through the block table. A block handed to
// two sequences, a wrong prefix hit or a lost block changes what it reads, hence the output.
class FakeModel {
 public:
  FakeModel(const KvCacheManager& kv, int64_t vocab)
      : kv_(kv), vocab_(vocab), slots_(static_cast<size_t>(kv.num_blocks() * kv.block_size()), -1) {}

  // Runs one step, right after schedule() committed it; returns the sampled tokens in
  // update()'s order. A position whose token is still pending (asynchronous scheduling)
  // gets the token the previous step sampled for the request, as the device would.
  std::vector<int64_t> execute(const SchedulerOutput& out) {
    std::vector<int64_t> sampled;
    std::map<std::string, int64_t> drawn;
    for (const ScheduledRequest& s : out.scheduled) {
      const Request& r = *s.request;
      const int64_t end = s.start_position + s.num_new_tokens;
      for (int64_t p = s.start_position; p < end; ++p) {
        EXPECT_EQ(kv_.ref_count(block_of(r, p)), 1) << r.id << " writes token " << p << " into a shared block";
        int64_t t = r.token_at(p);
        if (t == Request::kPendingToken) {
          EXPECT_EQ(p, r.known_tokens()) << r.id << ": only the oldest pending token can be an input";
          EXPECT_TRUE(last_drawn_.contains(r.id)) << r.id << ": no step before sampled position " << p;
          t = last_drawn_[r.id];
        }
        slot(r, p) = t;
      }
      if (!s.needs_logits) continue;
      std::vector<int64_t> context(static_cast<size_t>(end));
      for (int64_t p = 0; p < end; ++p) context[static_cast<size_t>(p)] = slot(r, p);
      sampled.push_back(next_token(r.seed, context, vocab_));
      drawn[r.id] = sampled.back();
    }
    last_drawn_ = std::move(drawn);
    return sampled;
  }

 private:
  int32_t block_of(const Request& r, int64_t p) const {
    return r.block_ids.at(static_cast<size_t>(p / kv_.block_size()));
  }
  int64_t& slot(const Request& r, int64_t p) {
    return slots_[static_cast<size_t>(block_of(r, p) * kv_.block_size() + p % kv_.block_size())];
  }
  const KvCacheManager& kv_;
  int64_t vocab_;
  std::vector<int64_t> slots_;
  std::map<std::string, int64_t> last_drawn_;  // the previous step's samples
};

// What a request generates alone, with the stop rules written out independently.
std::vector<int64_t> run_alone(const Request& r, int64_t vocab) {
  std::vector<int64_t> context = r.prompt_tokens, out;
  const auto is_in = [](const std::vector<int64_t>& v, int64_t t) { return std::find(v.begin(), v.end(), t) != v.end(); };
  while (true) {
    const int64_t t = next_token(r.seed, context, vocab);
    context.push_back(t);
    out.push_back(t);
    const auto n = static_cast<int64_t>(out.size());
    const bool stop_token = (!r.params.ignore_eos && is_in(r.eos_token_ids, t)) || is_in(r.params.stop_token_ids, t);
    if (n >= r.params.min_tokens && stop_token) return out;
    if (n == r.params.max_tokens) return out;
    if (r.max_model_len > 0 && static_cast<int64_t>(context.size()) == r.max_model_len) return out;
  }
}

// A scheduler, its cache and the fake model, stepping together with per-step checks. With
// max_steps_in_flight 2 each step's update comes after the next step was scheduled and run
// (asynchronous scheduling, as the engine does it).
struct Engine {
  KvCacheManager kv;
  Scheduler sched;
  FakeModel model;
  std::map<std::string, std::unique_ptr<Request>> done;
  std::vector<SchedulerOutput> history;
  std::deque<std::pair<SchedulerOutput, std::vector<int64_t>>> in_flight;

  Engine(SchedulerConfig cfg, int64_t num_blocks, int64_t block_size, bool prefix_caching = true, int64_t vocab = 16)
      : kv(num_blocks, block_size, prefix_caching), sched(cfg, kv), model(kv, vocab) {}

  SchedulerOutput step() {
    SchedulerOutput out = sched.schedule();
    sched.check_invariants();
    int64_t sum = 0;
    std::set<const Request*> seen;
    for (const auto& s : out.scheduled) {
      sum += s.num_new_tokens;
      EXPECT_GE(s.num_new_tokens, 1);
      EXPECT_TRUE(seen.insert(s.request).second) << s.request->id << " scheduled twice in one step";
      // Committed: a sampling step's pending token is the request's last position.
      if (s.needs_logits)
        EXPECT_EQ(s.start_position + s.num_new_tokens, s.request->total_tokens() - 1) << s.request->id;
      else
        EXPECT_LT(s.start_position + s.num_new_tokens, s.request->total_tokens()) << s.request->id;
      EXPECT_EQ(s.start_position + s.num_new_tokens, s.request->num_computed_tokens) << s.request->id;
    }
    EXPECT_EQ(out.num_batched_tokens, sum);
    EXPECT_LE(sum, sched.config().max_num_batched_tokens);
    EXPECT_LE(sched.num_running(), sched.config().max_num_seqs);
    // A step that had to preempt admits nobody (a request computes at least one token past
    // its cached prefix at admission, so a running one starts beyond num_cached_tokens).
    if (!out.preempted_ids.empty())
      for (const auto& s : out.scheduled)
        EXPECT_GT(s.start_position, s.request->num_cached_tokens) << s.request->id << " admitted while preempting";
    // Decode-first and FCFS together: the step is in arrival order.
    for (size_t i = 1; i < out.scheduled.size(); ++i)
      EXPECT_LT(out.scheduled[i - 1].request->arrival, out.scheduled[i].request->arrival);
    std::vector<int64_t> sampled = model.execute(out);
    if (!out.empty()) in_flight.emplace_back(out, std::move(sampled));
    // Apply the oldest step once the pipeline is full, and drain it when nothing new ran.
    while (!in_flight.empty() && (static_cast<int64_t>(in_flight.size()) >= sched.config().max_steps_in_flight ||
                                  out.empty())) {
      apply(in_flight.front().first, in_flight.front().second);
      in_flight.pop_front();
    }
    if (out.empty()) apply(out, {});
    history.push_back(out);
    return out;
  }

  void apply(const SchedulerOutput& out, const std::vector<int64_t>& sampled) {
    for (auto& r : sched.update(out, sampled)) {
      EXPECT_TRUE(r->finished());
      EXPECT_TRUE(r->block_ids.empty());
      EXPECT_EQ(r->num_steps_in_flight, 0) << r->id << " handed back while a step names it";
      std::string id = r->id;
      EXPECT_TRUE(done.emplace(id, std::move(r)).second);
    }
    sched.check_invariants();
    kv.check_invariants();
  }

  void run_to_completion(int max_steps = 10000) {
    for (int i = 0; i < max_steps && sched.has_unfinished(); ++i) step();
    EXPECT_FALSE(sched.has_unfinished()) << "did not finish in " << max_steps << " steps";
  }
};

std::vector<int64_t> num_new_tokens_of(const SchedulerOutput& out) {
  std::vector<int64_t> n;
  for (const auto& s : out.scheduled) n.push_back(s.num_new_tokens);
  return n;
}

// ---- configuration and bad input ------------------------------------------------------------

TEST(Scheduler, BadConfigGivesClearErrors) {
  KvCacheManager kv(16, 4, true);
  auto make = [&](SchedulerConfig c) { Scheduler s(c, kv); };
  expect_error([&] { make({.max_num_batched_tokens = 0}); }, "max_num_batched_tokens");
  expect_error([&] { make({.max_num_seqs = 0}); }, "max_num_seqs");
  expect_error([&] { make({.long_prefill_token_threshold = -1}); }, "long_prefill_token_threshold");
  expect_error([&] { make({.chunked_prefill = false, .long_prefill_token_threshold = 4}); }, "needs chunked_prefill");
}

TEST(Scheduler, AddRejectsBadRequests) {
  KvCacheManager kv(4, 4, true);  // 16 tokens of K/V
  Scheduler s({.max_num_batched_tokens = 32}, kv);
  expect_error([&] { s.add(nullptr); }, "needs a request");
  expect_error([&] { s.add(make_request("", {1})); }, "id must not be empty");
  expect_error([&] { s.add(make_request("a", {})); }, "empty prompt");
  expect_error([&] { s.add(make_request("a", {1, -2})); }, "prompt token ids must be >= 0");
  expect_error([&] { s.add(make_request("a", {1}, 0)); }, "request a: check failed: max_tokens >= 1");
  auto eos = make_request("a", {1});
  eos->eos_token_ids = {-1};
  expect_error([&] { s.add(std::move(eos)); }, "eos_token_ids");
  auto used = make_request("a", {1});
  used->output_tokens = {3};
  expect_error([&] { s.add(std::move(used)); }, "not fresh");
  auto computed = make_request("a", {1, 2});
  computed->num_computed_tokens = 1;
  expect_error([&] { s.add(std::move(computed)); }, "not fresh");
  auto len = make_request("a", {1, 2, 3});
  len->max_model_len = 3;
  expect_error([&] { s.add(std::move(len)); }, "no room for an output under max_model_len");
  // Worst case prompt 10 + 8 outputs - 1 = 17 tokens of K/V > 16.
  expect_error([&] { s.add(make_request("a", tokens(10), 8)); }, "more than the whole cache holds");
  expect_error([&] { s.add(make_request("a", tokens(10), int64_t{1} << 62)); }, "more than the whole cache holds");
  auto capped = make_request("a", tokens(10), 1000);
  capped->max_model_len = 17;  // K/V for 16 tokens at most: fits
  s.add(std::move(capped));
  s.add(make_request("b", tokens(10), 7));
  expect_error([&] { s.add(make_request("b", {1})); }, "already in the scheduler");
  EXPECT_EQ(s.num_waiting(), 2);

  Scheduler whole({.max_num_batched_tokens = 8, .chunked_prefill = false}, kv);
  expect_error([&] { whole.add(make_request("long", tokens(9), 1)); }, "chunked prefill is off");
}

TEST(Scheduler, UpdateRejectsOutputsThatDoNotMatch) {
  KvCacheManager kv(16, 4, true);
  Scheduler s({}, kv);
  s.add(make_request("a", tokens(5)));
  expect_error([&] { s.update(SchedulerOutput{}, {1}); }, "sampled tokens");
  const SchedulerOutput out = s.schedule();
  expect_error([&] { s.schedule(); }, "before update()");
  expect_error([&] { s.update(out, {}); }, "0 sampled tokens for 1");
  expect_error([&] { s.update(out, {-3}); }, "sampled token ids must be >= 0");
  EXPECT_TRUE(s.update(SchedulerOutput{}, {}).empty());  // an empty step only hands back what finished
  SchedulerOutput forged = out;
  forged.scheduled[0].start_position = 1;
  expect_error([&] { s.update(forged, {1}); }, "does not match");
  EXPECT_EQ(s.update(out, {7}).size(), 0u);  // the failed calls changed nothing
  EXPECT_EQ(out.scheduled[0].request->output_tokens, std::vector<int64_t>{7});
  expect_error([&] { s.update(out, {7}); }, "not pending");
  s.check_invariants();

  // Asynchronous: two steps in flight, applied oldest first.
  KvCacheManager kv2(16, 4, true);
  Scheduler a({.max_steps_in_flight = 2}, kv2);
  a.add(make_request("a", tokens(5)));
  const SchedulerOutput first = a.schedule();
  const SchedulerOutput second = a.schedule();
  expect_error([&] { a.schedule(); }, "too many steps in flight");
  expect_error([&] { a.update(second, {1}); }, "out of order");
  a.update(first, {4});
  a.update(second, {5});
  EXPECT_EQ(first.scheduled[0].request->output_tokens, (std::vector<int64_t>{4, 5}));
  expect_error([&] { Scheduler bad({.max_steps_in_flight = 3}, kv2); }, "max_steps_in_flight");
}

// ---- budget, chunking, order ------------------------------------------------------------------

TEST(Scheduler, ChunkedPrefillSplitsALongPromptWithinTheBudget) {
  Engine e({.max_num_batched_tokens = 8}, 64, 4);
  e.sched.add(make_request("a", tokens(20), 3));
  EXPECT_EQ(num_new_tokens_of(e.step()), std::vector<int64_t>{8});
  EXPECT_EQ(num_new_tokens_of(e.step()), std::vector<int64_t>{8});
  const SchedulerOutput last = e.step();
  EXPECT_EQ(num_new_tokens_of(last), std::vector<int64_t>{4});
  EXPECT_TRUE(last.scheduled[0].needs_logits);
  EXPECT_FALSE(e.history[0].scheduled[0].needs_logits);
  EXPECT_EQ(last.scheduled[0].start_position, 16);
  e.run_to_completion();
  EXPECT_EQ(e.done.at("a")->output_tokens.size(), 3u);
  EXPECT_EQ(e.history.size(), 5u);  // 3 prefill steps, then 2 decodes
}

TEST(Scheduler, LongPrefillThresholdCapsEachChunk) {
  Engine e({.max_num_batched_tokens = 64, .long_prefill_token_threshold = 6}, 64, 4);
  e.sched.add(make_request("a", tokens(14), 2));
  e.sched.add(make_request("b", tokens(3), 2));
  EXPECT_EQ(num_new_tokens_of(e.step()), (std::vector<int64_t>{6, 3}));
  EXPECT_EQ(num_new_tokens_of(e.step()), (std::vector<int64_t>{6, 1}));
  EXPECT_EQ(num_new_tokens_of(e.step()), (std::vector<int64_t>{2}));
}

TEST(Scheduler, WithoutChunkedPrefillAPromptWaitsForAStepWithRoom) {
  Engine e({.max_num_batched_tokens = 10, .chunked_prefill = false}, 64, 4);
  e.sched.add(make_request("a", tokens(3), 4));
  EXPECT_EQ(num_new_tokens_of(e.step()), std::vector<int64_t>{3});
  e.sched.add(make_request("b", tokens(10, 20), 1));  // needs a whole step
  e.sched.add(make_request("c", tokens(2, 40), 1));   // fits, but must not overtake b
  EXPECT_EQ(num_new_tokens_of(e.step()), std::vector<int64_t>{1});
  EXPECT_EQ(num_new_tokens_of(e.step()), std::vector<int64_t>{1});
  EXPECT_EQ(num_new_tokens_of(e.step()), std::vector<int64_t>{1});  // a's last decode
  ASSERT_TRUE(e.done.contains("a"));
  const SchedulerOutput out = e.step();
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].request->id, "b");
  EXPECT_EQ(out.scheduled[0].num_new_tokens, 10);
  EXPECT_EQ(e.step().scheduled.at(0).request->id, "c");

  Engine fits({.max_num_batched_tokens = 10, .chunked_prefill = false}, 64, 4);
  fits.sched.add(make_request("a", tokens(3), 4));
  fits.step();
  fits.sched.add(make_request("b", tokens(9, 20), 1));
  EXPECT_EQ(num_new_tokens_of(fits.step()), (std::vector<int64_t>{1, 9}));  // 1 + 9 = the budget
}

TEST(Scheduler, RunningRequestsComeFirstThenWaitingOnesFcfs) {
  Engine e({.max_num_batched_tokens = 12}, 64, 4);
  e.sched.add(make_request("a", tokens(5), 8));
  e.sched.add(make_request("b", tokens(5), 8));
  EXPECT_EQ(num_new_tokens_of(e.step()), (std::vector<int64_t>{5, 5}));
  e.sched.add(make_request("c", tokens(30), 2));
  e.sched.add(make_request("d", tokens(4), 2));
  // a and b decode first; c's prefill takes the rest of the budget; d waits behind c.
  SchedulerOutput out = e.step();
  EXPECT_EQ(num_new_tokens_of(out), (std::vector<int64_t>{1, 1, 10}));
  EXPECT_EQ(out.scheduled[2].request->id, "c");
  out = e.step();  // c is running now: it comes before d, still within the budget
  ASSERT_EQ(out.scheduled.size(), 3u);
  EXPECT_EQ(out.scheduled[2].request->id, "c");
  EXPECT_EQ(e.sched.num_waiting(), 1);
  e.run_to_completion();
  EXPECT_EQ(e.done.size(), 4u);
}

TEST(Scheduler, MaxNumSeqsLimitsRunningRequests) {
  Engine e({.max_num_seqs = 2}, 64, 4);
  for (const char* id : {"a", "b", "c"}) e.sched.add(make_request(id, tokens(3), 2));
  EXPECT_EQ(e.step().scheduled.size(), 2u);
  EXPECT_EQ(e.sched.num_running(), 2);
  EXPECT_EQ(e.sched.num_waiting(), 1);
  EXPECT_EQ(e.step().scheduled.size(), 2u);  // a and b finish here
  EXPECT_EQ(e.step().scheduled.at(0).request->id, "c");
  e.run_to_completion();
}

// ---- preemption ---------------------------------------------------------------------------------

TEST(Scheduler, PreemptsTheNewestRequestAndRecomputesItLater) {
  // 8 blocks of 4 tokens. Three 8-token prompts take 6 blocks; the first decodes need a
  // third block each, and the cache runs out at the third request.
  Engine e({.max_num_batched_tokens = 64}, 8, 4, /*prefix_caching=*/false);
  for (const char* id : {"a", "b", "c"}) e.sched.add(make_request(id, tokens(8, 10 * (id[0] - 'a' + 1)), 8));
  e.step();
  const SchedulerOutput out = e.step();
  ASSERT_EQ(out.preempted_ids, std::vector<std::string>{"c"});
  EXPECT_EQ(num_new_tokens_of(out), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(e.sched.num_waiting(), 1);
  EXPECT_EQ(e.sched.num_preemptions(), 1);

  // Once a and b finish, c recomputes its prompt and its one output in a single step.
  e.run_to_completion();
  const Request& c = *e.done.at("c");
  EXPECT_EQ(c.num_preemptions, 1);
  bool recomputed = false;
  for (const auto& step : e.history)
    for (const auto& s : step.scheduled)
      if (s.request->id == "c" && s.start_position == 0 && s.num_new_tokens == 9) recomputed = true;
  EXPECT_TRUE(recomputed) << "c's recompute should cover its prompt and its first output";
  for (const auto& [id, r] : e.done) {
    EXPECT_EQ(r->finish_reason, FinishReason::length) << id;
    EXPECT_EQ(r->output_tokens, run_alone(*r, 16)) << id;
    EXPECT_EQ(r->output_tokens.size(), 8u) << id;
  }
}

TEST(Scheduler, PreemptsFromTheBackNeverARequestAlreadyScheduled) {
  // 7 blocks of 2 tokens; three 4-token prompts take 6. In the next step a's decode takes the
  // last free block; b's decode then preempts c (the newest), never a.
  Engine e({.max_num_batched_tokens = 64}, 7, 2, false);
  for (const char* id : {"a", "b", "c"}) e.sched.add(make_request(id, tokens(4, 10 * (id[0] - 'a' + 1)), 3));
  e.step();
  const SchedulerOutput out = e.step();
  EXPECT_EQ(out.preempted_ids, std::vector<std::string>{"c"});
  ASSERT_EQ(out.scheduled.size(), 2u);
  EXPECT_EQ(out.scheduled[0].request->id, "a");
  EXPECT_EQ(out.scheduled[1].request->id, "b");
  e.run_to_completion();
  for (const auto& [id, r] : e.done) EXPECT_EQ(r->output_tokens, run_alone(*r, 16)) << id;
  EXPECT_EQ(e.done.at("c")->num_preemptions, 1);
}

TEST(Scheduler, ARequestThatIsItsOwnVictimStopsTheRunningPass) {
  Engine e({.max_num_batched_tokens = 64}, 5, 2, false);
  e.sched.add(make_request("a", tokens(4), 5));  // blocks: 2 now, up to 4
  e.sched.add(make_request("b", tokens(4), 5));
  e.step();  // 4 of 5 blocks taken
  // a's decode takes the 5th block, b's decode finds none: b is its own victim.
  const SchedulerOutput out = e.step();
  EXPECT_EQ(out.preempted_ids, std::vector<std::string>{"b"});
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].request->id, "a");
  e.run_to_completion();
  for (const auto& [id, r] : e.done) EXPECT_EQ(r->output_tokens, run_alone(*r, 16)) << id;
}

// ---- stop rules ----------------------------------------------------------------------------------

// Runs one request, feeding it the given tokens as samples; returns it once finished.
std::unique_ptr<Request> feed(std::unique_ptr<Request> r, const std::vector<int64_t>& samples) {
  KvCacheManager kv(64, 4, true);
  Scheduler s({}, kv);
  s.add(std::move(r));
  for (int64_t t : samples) {
    auto out = s.schedule();
    auto done = s.update(out, {t});
    if (!done.empty()) return std::move(done[0]);
  }
  ADD_FAILURE() << "did not finish";
  return nullptr;
}

TEST(Scheduler, EosStopsAndIsKept) {
  auto r = make_request("a", {1, 2}, 10);
  r->eos_token_ids = {9};
  auto done = feed(std::move(r), {4, 9, 5});
  EXPECT_EQ(done->output_tokens, (std::vector<int64_t>{4, 9}));
  EXPECT_EQ(done->finish_reason, FinishReason::stop);
}

TEST(Scheduler, IgnoreEosKeepsGoingUntilMaxTokens) {
  auto r = make_request("a", {1, 2}, 3);
  r->eos_token_ids = {9};
  r->params.ignore_eos = true;
  auto done = feed(std::move(r), {9, 9, 9, 9});
  EXPECT_EQ(done->output_tokens, (std::vector<int64_t>{9, 9, 9}));
  EXPECT_EQ(done->finish_reason, FinishReason::length);
}

TEST(Scheduler, StopTokensStopEvenWithIgnoreEos) {
  auto r = make_request("a", {1}, 10);
  r->params.stop_token_ids = {7};
  r->params.ignore_eos = true;
  auto done = feed(std::move(r), {3, 7});
  EXPECT_EQ(done->output_tokens, (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(std::string(finish_reason_name(done->finish_reason)), "stop");
}

TEST(Scheduler, MinTokensIgnoresEosAndStopTokensBeforeIt) {
  auto r = make_request("a", {1}, 10);
  r->eos_token_ids = {9};
  r->params.stop_token_ids = {7};
  r->params.min_tokens = 3;
  auto done = feed(std::move(r), {9, 7, 9, 5});
  EXPECT_EQ(done->output_tokens, (std::vector<int64_t>{9, 7, 9}));  // the third output may stop
  EXPECT_EQ(done->finish_reason, FinishReason::stop);
}

TEST(Scheduler, MaxModelLenFinishesWithLength) {
  auto r = make_request("a", {1, 2, 3}, 100);
  r->max_model_len = 6;
  auto done = feed(std::move(r), {4, 4, 4, 4});
  EXPECT_EQ(done->output_tokens.size(), 3u);  // 3 + 3 = max_model_len
  EXPECT_EQ(done->finish_reason, FinishReason::length);
}

TEST(Scheduler, StopRuleOrderOnTheLastAllowedToken) {
  Request r;
  r.prompt_tokens = {1};
  r.params.max_tokens = 2;
  r.eos_token_ids = {9};
  r.output_tokens = {4, 9};
  EXPECT_EQ(stop_reason(r), FinishReason::stop);  // a stop token wins over the length limit
  r.output_tokens = {4, 5};
  EXPECT_EQ(stop_reason(r), FinishReason::length);
  r.output_tokens = {4};
  EXPECT_EQ(stop_reason(r), FinishReason::none);
}

// ---- abort -----------------------------------------------------------------------------------------

TEST(Scheduler, AbortWaitingAndRunningRequests) {
  KvCacheManager kv(64, 4, true);
  Scheduler s({.max_num_seqs = 1}, kv);
  s.add(make_request("run", tokens(5), 10));
  s.add(make_request("wait", tokens(5), 10));
  EXPECT_FALSE(s.abort("unknown"));
  SchedulerOutput out = s.schedule();
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_TRUE(s.abort("wait"));   // finished at once...
  EXPECT_EQ(s.num_waiting(), 0);
  EXPECT_TRUE(s.abort("run"));    // ...this one at the next update, its token dropped
  EXPECT_TRUE(s.has_unfinished());
  auto done = s.update(out, {3});
  ASSERT_EQ(done.size(), 2u);
  for (const auto& r : done) {
    EXPECT_EQ(r->finish_reason, FinishReason::abort) << r->id;
    EXPECT_TRUE(r->output_tokens.empty()) << r->id;
  }
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_FALSE(s.abort("run"));  // handed back: unknown now
  EXPECT_EQ(kv.num_free_blocks(), 64);
  s.check_invariants();
}

TEST(Scheduler, AbortedWaitingRequestIsHandedBackByTheNextUpdate) {
  KvCacheManager kv(64, 4, true);
  Scheduler s({}, kv);
  s.add(make_request("a", tokens(5)));
  EXPECT_TRUE(s.abort("a"));
  EXPECT_FALSE(s.abort("a"));  // already finished
  EXPECT_TRUE(s.has_unfinished());
  const SchedulerOutput out = s.schedule();
  EXPECT_TRUE(out.empty());
  auto done = s.update(out, {});
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0]->finish_reason, FinishReason::abort);
  EXPECT_FALSE(s.has_unfinished());
}

// ---- prefix cache admission -----------------------------------------------------------------------

TEST(Scheduler, AdmissionUsesThePrefixCache) {
  Engine e({}, 64, 4);
  e.sched.add(make_request("a", tokens(10), 2));
  e.run_to_completion();
  e.sched.add(make_request("b", tokens(11), 2));
  const SchedulerOutput out = e.step();
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].start_position, 8);
  EXPECT_EQ(out.scheduled[0].num_new_tokens, 3);
  EXPECT_EQ(out.scheduled[0].request->num_cached_tokens, 8);
  e.run_to_completion();
  EXPECT_EQ(e.done.at("b")->output_tokens, run_alone(*e.done.at("b"), 16));
}

// ---- randomised simulation -------------------------------------------------------------------------

struct SimConfig {
  SchedulerConfig sched;
  int64_t num_blocks, block_size;
  bool prefix_caching;
  int num_requests;
};

void simulate(const SimConfig& cfg, uint64_t seed, int64_t& preemptions, int64_t& hits) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed << " (from FK_TEST_SEED base), budget "
                                    << cfg.sched.max_num_batched_tokens << ", blocks " << cfg.num_blocks << "x"
                                    << cfg.block_size << ", chunked " << cfg.sched.chunked_prefill);
  std::mt19937_64 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  constexpr int64_t kVocab = 12;
  Engine e(cfg.sched, cfg.num_blocks, cfg.block_size, cfg.prefix_caching, kVocab);
  std::vector<std::vector<int64_t>> bases(3);
  for (auto& b : bases)
    for (int i = 0; i < 24; ++i) b.push_back(uniform(0, kVocab - 1));
  const int64_t capacity = cfg.num_blocks * cfg.block_size;
  const int64_t max_prompt = cfg.sched.chunked_prefill ? 40 : std::min<int64_t>(40, cfg.sched.max_num_batched_tokens);

  std::map<std::string, std::vector<int64_t>> expected;
  std::set<std::string> aborted;
  int added = 0;
  for (int step = 0; step < 20000 && (added < cfg.num_requests || e.sched.has_unfinished()); ++step) {
    for (int64_t k = uniform(0, 3); k > 0 && added < cfg.num_requests; --k) {
      auto r = make_request("r" + std::to_string(added), {});
      const auto& base = bases[static_cast<size_t>(uniform(0, 2))];
      const int64_t shared = uniform(0, static_cast<int64_t>(base.size()));
      r->prompt_tokens.assign(base.begin(), base.begin() + std::min(shared, max_prompt));
      while (static_cast<int64_t>(r->prompt_tokens.size()) < std::min(max_prompt, shared + uniform(1, 16)))
        r->prompt_tokens.push_back(uniform(0, kVocab - 1));
      const auto prompt = static_cast<int64_t>(r->prompt_tokens.size());
      r->params.max_tokens = std::max<int64_t>(1, std::min(uniform(1, 24), capacity + 1 - prompt));
      r->params.min_tokens = uniform(0, r->params.max_tokens);
      if (uniform(0, 1)) r->eos_token_ids = {uniform(0, kVocab - 1)};
      if (uniform(0, 3) == 0) r->params.stop_token_ids = {uniform(0, kVocab - 1)};
      r->params.ignore_eos = uniform(0, 5) == 0;
      if (uniform(0, 4) == 0) r->max_model_len = prompt + uniform(1, 10);
      r->seed = static_cast<uint64_t>(uniform(0, 3));  // equal seeds and prompts share whole sequences
      expected[r->id] = run_alone(*r, kVocab);
      e.sched.add(std::move(r));
      ++added;
    }
    if (uniform(0, 60) == 0 && added > 0) {
      const std::string id = "r" + std::to_string(uniform(0, added - 1));
      if (e.sched.abort(id)) aborted.insert(id);
    }
    e.step();
    if (::testing::Test::HasFailure()) return;
  }
  ASSERT_FALSE(e.sched.has_unfinished());
  ASSERT_EQ(e.done.size(), static_cast<size_t>(cfg.num_requests));
  for (const auto& [id, r] : e.done) {
    const auto& want = expected.at(id);
    if (aborted.contains(id)) {
      EXPECT_EQ(r->finish_reason, FinishReason::abort) << id;
      ASSERT_LE(r->output_tokens.size(), want.size()) << id;
      EXPECT_TRUE(std::equal(r->output_tokens.begin(), r->output_tokens.end(), want.begin())) << id;
    } else {
      EXPECT_EQ(r->output_tokens, want) << id << " (preempted " << r->num_preemptions << " times)";
      EXPECT_NE(r->finish_reason, FinishReason::abort) << id;
    }
  }
  EXPECT_EQ(e.kv.num_free_blocks(), cfg.num_blocks);
  preemptions += e.sched.num_preemptions();
  hits += e.kv.stats().prefix_hits;
}

class SchedulerSimulation : public testing::TestWithParam<int64_t> {};  // steps in flight

TEST_P(SchedulerSimulation, GivesEveryRequestItsSoloOutput) {
  const uint64_t seed = test::seed_for("Scheduler.RandomisedSimulationGivesEveryRequestItsSoloOutput");
  SimConfig configs[] = {
      {{.max_num_batched_tokens = 32, .max_num_seqs = 8}, 24, 4, true, 120},
      {{.max_num_batched_tokens = 16, .max_num_seqs = 64}, 16, 4, true, 120},
      {{.max_num_batched_tokens = 48, .long_prefill_token_threshold = 7}, 40, 2, true, 120},
      {{.max_num_batched_tokens = 40, .max_num_seqs = 16, .chunked_prefill = false}, 20, 4, true, 120},
      {{.max_num_batched_tokens = 24}, 70, 1, false, 100},
      {{.max_num_batched_tokens = 64, .max_num_seqs = 4}, 12, 8, true, 100},
  };
  int64_t preemptions = 0, hits = 0;
  for (size_t i = 0; i < std::size(configs); ++i) {
    configs[i].sched.max_steps_in_flight = GetParam();
    simulate(configs[i], seed + i, preemptions, hits);
    if (HasFailure()) return;
  }
  EXPECT_GT(preemptions, 0) << "seed " << seed << ": the simulation should force preemptions";
  EXPECT_GT(hits, 0) << "seed " << seed << ": the simulation should hit the prefix cache";
}

INSTANTIATE_TEST_SUITE_P(StepsInFlight, SchedulerSimulation, testing::Values(1, 2),
                         [](const auto& info) { return info.param == 1 ? "synchronous" : "asynchronous"; });

}  // namespace
}  // namespace fk::engine
