// The scheduler with a recurrent state pool (src/serving/generate/scheduler.h): slots given
// at admission and back at finish, preemption and abort; admission waiting for a free slot;
// prefix caching refused. And a randomised simulation whose fake model keeps its whole
// context in its recurrent slot, as a state-space layer does: a slot shared by two running
// requests, a state kept across a preemption, or a continued chunk that starts from a
// fresh state changes what it samples, so every request must produce what it produces alone
// however it was batched, chunked or preempted, synchronously or with a step in flight.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <map>
#include <ostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fk/status.h"
#include "serving/generate/scheduler.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

using runtime::RecurrentSlotPool;
using runtime::StateKind;
using runtime::StateSpec;

// One layer whose state is one u64: the fold of every token the sequence has computed.
StateSpec fold_state() {
  StateSpec spec;
  spec.group = "fold";
  spec.kind = StateKind::recurrent_slot;
  spec.layers = {0};
  spec.slot_bytes_per_layer = 8;
  return spec;
}

std::unique_ptr<Request> make_request(std::string id, int64_t prompt_len, int64_t max_tokens, uint64_t seed = 0) {
  auto r = std::make_unique<Request>();
  r->id = std::move(id);
  for (int64_t i = 0; i < prompt_len; ++i) r->prompt_tokens.push_back(1 + (i * 7 + static_cast<int64_t>(seed % 13)) % 13);
  r->params.max_tokens = max_tokens;
  r->params.ignore_eos = true;
  r->seed = seed;
  return r;
}

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
uint64_t fold(uint64_t state, int64_t token) { return mix(state ^ static_cast<uint64_t>(token)); }
int64_t sample(uint64_t state, uint64_t seed, int64_t vocab) {
  return static_cast<int64_t>(mix(state ^ seed) % static_cast<uint64_t>(vocab));
}
constexpr uint64_t kFreshState = 0;  // what a freshly allocated (zeroed) slot holds

// Reads its state from the request's slot (a step starting at 0 must find it fresh), folds
// the step's tokens into it and writes it back; samples from the state.
class FoldModel {
 public:
  FoldModel(RecurrentSlotPool& pool, int64_t vocab) : pool_(pool), vocab_(vocab) {}

  std::vector<int64_t> execute(const SchedulerOutput& out) {
    std::vector<int64_t> sampled;
    std::map<std::string, int64_t> drawn;
    std::map<int32_t, std::string> slot_owner;
    for (const ScheduledRequest& s : out.scheduled) {
      const Request& r = *s.request;
      EXPECT_GE(r.state_slot, 0) << r.id << " is scheduled without a state slot";
      EXPECT_TRUE(slot_owner.emplace(r.state_slot, r.id).second)
          << r.id << " shares slot " << r.state_slot << " with " << slot_owner[r.state_slot];
      uint64_t state = load(r.state_slot);
      if (s.start_position == 0) EXPECT_EQ(state, kFreshState) << r.id << " starts from a used slot";
      for (int64_t p = s.start_position; p < s.start_position + s.num_new_tokens; ++p) {
        int64_t t = r.token_at(p);
        if (t == Request::kPendingToken) t = last_drawn_.at(r.id);  // sampled by the step in flight
        state = fold(state, t);
      }
      store(r.state_slot, state);
      if (!s.needs_logits) continue;
      sampled.push_back(sample(state, r.seed, vocab_));
      drawn[r.id] = sampled.back();
    }
    last_drawn_ = std::move(drawn);
    return sampled;
  }

 private:
  uint64_t load(int32_t slot) const {
    uint64_t v;
    std::memcpy(&v, pool_.slot_bytes(slot).data, sizeof v);
    return v;
  }
  void store(int32_t slot, uint64_t v) { std::memcpy(pool_.slot_bytes(slot).data, &v, sizeof v); }

  RecurrentSlotPool& pool_;
  int64_t vocab_;
  std::map<std::string, int64_t> last_drawn_;
};

std::vector<int64_t> run_alone(const Request& r, int64_t vocab) {
  uint64_t state = kFreshState;
  for (int64_t t : r.prompt_tokens) state = fold(state, t);
  std::vector<int64_t> out;
  while (static_cast<int64_t>(out.size()) < r.params.max_tokens) {
    out.push_back(sample(state, r.seed, vocab));
    state = fold(state, out.back());
  }
  return out;
}

struct SlotEngine {
  KvCacheManager kv;
  RecurrentSlotPool pool;
  Scheduler sched;
  FoldModel model;
  std::map<std::string, std::unique_ptr<Request>> done;
  std::deque<std::pair<SchedulerOutput, std::vector<int64_t>>> in_flight;
  int64_t max_slots_used = 0;

  SlotEngine(SchedulerConfig cfg, int64_t num_blocks, int64_t block_size, int64_t num_slots, int64_t vocab = 16)
      : kv(num_blocks, block_size, /*enable_prefix_caching=*/false),
        pool(fold_state(), num_slots, Device::cpu()),
        sched(cfg, kv, &pool),
        model(pool, vocab) {}

  SchedulerOutput step() {
    SchedulerOutput out = sched.schedule();
    sched.check_invariants();
    max_slots_used = std::max(max_slots_used, pool.num_used());
    std::vector<int64_t> sampled = model.execute(out);
    if (!out.empty()) in_flight.emplace_back(out, std::move(sampled));
    while (!in_flight.empty() &&
           (static_cast<int64_t>(in_flight.size()) >= sched.config().max_steps_in_flight || out.empty())) {
      apply(in_flight.front().first, in_flight.front().second);
      in_flight.pop_front();
    }
    if (out.empty()) apply(out, {});
    return out;
  }
  void apply(const SchedulerOutput& out, const std::vector<int64_t>& sampled) {
    for (auto& r : sched.update(out, sampled)) {
      EXPECT_EQ(r->state_slot, -1) << r->id << " handed back holding a state slot";
      std::string id = r->id;
      done.emplace(id, std::move(r));
    }
    sched.check_invariants();
  }
  void run_to_completion(int max_steps = 10000) {
    for (int i = 0; i < max_steps && sched.has_unfinished(); ++i) step();
    EXPECT_FALSE(sched.has_unfinished()) << "did not finish in " << max_steps << " steps";
    EXPECT_EQ(pool.num_used(), 0) << "slots still held after every request finished";
  }
};

template <class F>
void expect_error(F&& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no fk::Error; expected one mentioning '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(SchedulerStateSlots, PrefixCachingIsRefusedNamingWhy) {
  KvCacheManager kv(16, 4, /*enable_prefix_caching=*/true);
  RecurrentSlotPool pool(fold_state(), 4, Device::cpu());
  expect_error([&] { Scheduler s(SchedulerConfig{}, kv, &pool); }, "prefix caching of a model with recurrent state");
}

TEST(SchedulerStateSlots, APoolWithSlotsInUseIsRefused) {
  KvCacheManager kv(16, 4, false);
  RecurrentSlotPool pool(fold_state(), 4, Device::cpu());
  pool.allocate(99);
  expect_error([&] { Scheduler s(SchedulerConfig{}, kv, &pool); }, "1 slots in use");
}

TEST(SchedulerStateSlots, AdmissionWaitsForAFreeSlotAndFinishingFreesIt) {
  SchedulerConfig cfg;
  cfg.max_num_batched_tokens = 64;
  SlotEngine e(cfg, 64, 4, /*num_slots=*/2);
  for (int i = 0; i < 3; ++i) e.sched.add(make_request("r" + std::to_string(i), 5, 2 + i, i));
  SchedulerOutput first = e.step();
  ASSERT_EQ(first.scheduled.size(), 2u) << "two slots admit two requests";
  EXPECT_EQ(e.sched.num_waiting(), 1);
  EXPECT_NE(first.scheduled[0].request->state_slot, first.scheduled[1].request->state_slot);
  e.run_to_completion();
  EXPECT_EQ(e.max_slots_used, 2);
  ASSERT_EQ(e.done.size(), 3u);
  for (const auto& [id, r] : e.done) EXPECT_EQ(r->output_tokens, run_alone(*r, 16)) << id;
}

TEST(SchedulerStateSlots, AbortFreesTheSlot) {
  SlotEngine e(SchedulerConfig{}, 64, 4, 2);
  e.sched.add(make_request("a", 5, 50));
  e.sched.add(make_request("b", 5, 50));
  e.sched.add(make_request("c", 5, 3));
  e.step();
  EXPECT_EQ(e.pool.num_used(), 2);
  ASSERT_TRUE(e.sched.abort("a"));
  e.step();  // the update of this step finishes a and frees its slot; c is admitted after it
  e.step();
  EXPECT_TRUE(e.done.contains("a"));
  ASSERT_TRUE(e.sched.abort("b"));
  e.run_to_completion();
  EXPECT_EQ(e.done.at("c")->output_tokens, run_alone(*e.done.at("c"), 16));
}

TEST(SchedulerStateSlots, PreemptedRequestRestartsFromAFreshState) {
  // 6 blocks of 4 tokens: two requests of 8 + 12 tokens cannot both grow, so the newer one
  // is preempted and recomputed, its slot freed and a fresh one given at readmission.
  SchedulerConfig cfg;
  cfg.max_num_batched_tokens = 16;
  SlotEngine e(cfg, 6, 4, 2);
  e.sched.add(make_request("old", 8, 12, 1));
  e.sched.add(make_request("new", 8, 12, 2));
  e.run_to_completion();
  EXPECT_GT(e.sched.num_preemptions(), 0) << "the cache was meant to be too small for both";
  for (const auto& [id, r] : e.done) EXPECT_EQ(r->output_tokens, run_alone(*r, 16)) << id;
}

struct SimulationCase {
  int64_t steps_in_flight;
  bool chunked;
  friend void PrintTo(const SimulationCase& c, std::ostream* os) {
    *os << c.steps_in_flight << " step(s) in flight, chunked prefill " << (c.chunked ? "on" : "off");
  }
};

class SchedulerStateSlotsSimulation : public ::testing::TestWithParam<SimulationCase> {};

TEST_P(SchedulerStateSlotsSimulation, GivesEveryRequestItsSoloOutput) {
  const uint64_t seed = test::seed_for("SchedulerStateSlotsSimulation",
                                       static_cast<uint64_t>(GetParam().steps_in_flight * 2 + GetParam().chunked));
  std::mt19937_64 rng(seed);
  SchedulerConfig cfg;
  cfg.max_num_batched_tokens = 24;
  cfg.max_num_seqs = 6;
  cfg.chunked_prefill = GetParam().chunked;
  cfg.max_steps_in_flight = GetParam().steps_in_flight;
  // Fewer slots than max_num_seqs and a small cache: admission waits for slots and
  // preemption happens.
  SlotEngine e(cfg, 14, 4, /*num_slots=*/4);
  std::uniform_int_distribution<int64_t> prompt_len(1, 20), max_tokens(1, 16);
  std::uniform_int_distribution<int> arrivals(0, 2);
  int added = 0;
  for (int step = 0; step < 400 && (added < 30 || e.sched.has_unfinished()); ++step) {
    for (int a = arrivals(rng); a > 0 && added < 30; --a, ++added)
      e.sched.add(make_request("q" + std::to_string(added), prompt_len(rng), max_tokens(rng), rng()));
    e.step();
  }
  e.run_to_completion();
  ASSERT_EQ(e.done.size(), 30u) << "seed " << seed;
  EXPECT_LE(e.max_slots_used, 4);
  for (const auto& [id, r] : e.done) EXPECT_EQ(r->output_tokens, run_alone(*r, 16)) << id << ", seed " << seed;
}

INSTANTIATE_TEST_SUITE_P(Modes, SchedulerStateSlotsSimulation,
                         ::testing::Values(SimulationCase{1, true}, SimulationCase{2, true}, SimulationCase{1, false},
                                           SimulationCase{2, false}),
                         [](const auto& info) {
                           return std::string(info.param.steps_in_flight == 2 ? "Async" : "Sync") +
                                  (info.param.chunked ? "Chunked" : "Whole");
                         });

}  // namespace
}  // namespace fk::engine
