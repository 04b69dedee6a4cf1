#include "harness/judge/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <map>
#include <optional>
#include <thread>

#include "harness/check/bytes_equal.h"
#include "harness/time/call_timer.h"
#include "harness/time/cpu_time.h"
#include "harness/device/ceilings.h"
#include "harness/check/gpu_oracle.h"
#include "harness/judge/case_staging.h"
#include "harness/judge/plan_guard.h"
#include "harness/time/guardrails.h"
#include "harness/time/kernel_ownership.h"
#include "harness/time/kernel_trace.h"
#include "harness/check/op_check.h"
#include "harness/check/outside_tolerance.h"
#include "harness/check/reference_choice.h"
#include "harness/judge/edge_inputs.h"
#include "harness/judge/fresh_inputs.h"
#include "harness/judge/timed_check_sample.h"
#include "fk/philox.h"
#include "fk/runtime.h"

namespace fk::bench {

namespace {

// A verdict decided inside a round: thrown, caught per workload.
struct Failure {
  Verdict verdict;
  std::string message;
};

// The harness itself failed (its reference could not be computed): ends the evaluation
// with HARNESS_ERROR, saying nothing about the candidate.
struct HarnessFailure {
  std::string message;
};

bool written(ArgRole r) { return r == ArgRole::out || r == ArgRole::inout; }

// CPU time other threads may use, in cores on average, between the candidate's timed calls
// (the baseline's calls among them): an honest candidate leaves none running (a thread
// pool's idle workers sleep); a quarter of a core allows for the odd wake-up without
// letting a spinning thread through, even on a machine of one core, where it would get half.
constexpr double kMaxCoresBesideBaseline = 0.25;

void sync(DeviceType backend) {
  if (backend == DeviceType::cuda) rt::device_synchronize(0);
}

// Bytes of every written tensor, downloaded on `stream` only: a copy on the legacy
// default stream would wait for work the candidate left on other streams and hide it.
std::vector<std::string> output_bytes(const OpDef& def, const OpCase& c, void* stream) {
  std::vector<std::string> out;
  for (size_t i = 0; i < def.tensor_args.size(); ++i) {
    if (!written(def.tensor_args[i].role)) continue;
    const Tensor& t = c.tensors[i];
    std::string bytes(t.nbytes(), '\0');
    if (!t.defined() || t.nbytes() == 0) {
      // an optional output left out: nothing to read
    } else if (t.device().is_cpu()) {
      std::memcpy(bytes.data(), t.data(), t.nbytes());
    } else {
      rt::memcpy_async(bytes.data(), Device::cpu(), t.data(), t.device(), t.nbytes(), stream);
      rt::stream_synchronize(stream);
    }
    out.push_back(std::move(bytes));
  }
  return out;
}

// Writes the host case's input values (in and inout tensors) into an existing device case:
// the same addresses now hold new data.
void load_inputs(const OpDef& def, const OpCase& host, OpCase& dev) {
  for (size_t i = 0; i < def.tensor_args.size(); ++i) {
    const ArgRole r = def.tensor_args[i].role;
    if (r != ArgRole::in && r != ArgRole::inout) continue;
    if (!host.tensors[i].defined()) continue;  // an optional argument left out: nothing to load
    FK_CHECK(host.tensors[i].shape() == dev.tensors[i].shape(), "input reuse needs identical shapes");
    dev.tensors[i].copy_from(host.tensors[i]);
  }
}

// A timed call's time, and whether a busy machine made the runner wait for a processor
// for a tenth of it or more (that wait is not in the time: see remote_call).
struct TimedSample {
  double us = 0;
  bool descheduled = false;
};

// One request to a runner (case_staging.h): c's tensors staged into its arena, the
// request, and everything copied back, so the checks read what the runner left. With
// `timed` (a timed call) its time is the request's alone (RunnerProcess::Reply::us): the
// staging copies are not the call's.
TimedSample remote_call(const OpDef& def, const Implementation& impl, const OpCase& c, bool plan_call, const char* who,
                        bool timed) {
  RemoteImplementation& r = *impl.remote;
  const RunnerMessage kind = plan_call ? RunnerMessage::plan : RunnerMessage::run;
  RunnerProcess::Reply reply;
  try {
    // A timed call: the runner is woken first (its wake-up is no part of the call), then
    // the tensors are staged, then the request alone is timed.
    if (timed) r.runner->request(RunnerMessage::wake, 0);
    const std::vector<std::byte> args = r.staging->stage(def, c, plan_call && !impl.plan_sees_data);
    reply = r.runner->request(kind, 0, args.data(), args.size(), /*spin=*/timed);
    r.staging->unstage();
  } catch (const RunnerFailure& f) {
    throw Failure{f.verdict, concat(who, plan_call ? " plan" : "", ": ", f.message)};
  }
  const auto s = static_cast<fk_status>(reply.status);
  if (s != FK_OK)
    throw Failure{Verdict::RUNTIME_ERROR, concat(who, plan_call ? " plan" : "", " returned ", status_name(s), ": ", reply.text)};
  // On a busy machine (other processes, parallel evaluations) a runner that polls for its
  // request may wait for a processor for milliseconds: the wall time then measures the
  // machine's load. Time the runner was off every processor (the wall time less its CPU
  // time, all its threads) and spent waiting for one (run_delay) is taken off; time it
  // chose not to run (sleeping, blocked on work elsewhere) is not. Both figures are the
  // kernel's, read over a window a little wider than the call's: the CPU time over it is
  // the longer, so wall less CPU errs on the short side, and it bounds the wait taken off.
  if (reply.cpu_us < 0 || reply.waited_us < 0) return {reply.us};
  const double off = std::min(reply.us - reply.cpu_us, reply.waited_us);
  if (off <= 0) return {reply.us};
  return {reply.us - off, off >= 0.1 * reply.us};
}

void call(const OpDef& def, const Implementation& impl, const OpCase& c, void* stream, const char* who) {
  if (impl.remote) {
    remote_call(def, impl, c, /*plan_call=*/false, who, /*timed=*/false);
    return;
  }
  const fk_status s = impl.run(c.args_ptr(), stream);
  if (s != FK_OK) throw Failure{Verdict::RUNTIME_ERROR, concat(who, " returned ", status_name(s), ": ", last_error_message())};
}

// A call timed on `timer`: for a runner, its request alone.
TimedSample timed_call(const OpDef& def, const Implementation& impl, const OpCase& c, void* stream, const char* who,
                       CallTimer& timer) {
  if (impl.remote) return remote_call(def, impl, c, /*plan_call=*/false, who, /*timed=*/true);
  return {timer.time_us([&] { call(def, impl, c, stream, who); })};
}

void plan(const OpDef& def, const Implementation& impl, const OpCase& c, void* stream, const char* who) {
  if (impl.remote) {
    if (impl.remote->runner->has_plan()) remote_call(def, impl, c, /*plan_call=*/true, who, /*timed=*/false);
    return;
  }
  if (!impl.plan) return;
  const std::vector<std::byte> args = impl.plan_sees_data ? c.args : plan_only_args(def, c);
  const fk_status s = impl.plan(args.data(), stream);
  if (s != FK_OK) throw Failure{Verdict::RUNTIME_ERROR, concat(who, " plan returned ", status_name(s), ": ", last_error_message())};
}

// CPU seconds of the threads that may work beside the baseline: a runner's, every thread
// of it; in this process, every thread but the caller's.
std::map<int, double> threads_beside(const Implementation& cand) {
  return cand.remote ? cand.remote->runner->cpu_seconds_by_thread() : other_threads_cpu_seconds();
}

double worst_rel_l2(const std::vector<OutputError>& errs) {
  double w = 0;
  for (const auto& e : errs) w = std::max(w, e.rel_l2_err);
  return w;
}

// The reference outputs of a round (reference_choice.h): the CPU f64 oracle when
// affordable, else the op's GPU reference (f64 too), else the baseline's outputs.
struct Reference {
  OpCase c;
  ReferenceKind kind = ReferenceKind::oracle;
};

// A round's host-side work, which needs no device: its inputs and, when affordable, the
// f64 oracle's outputs. Done for all rounds at once on worker threads before the first
// round runs: at production shapes the inputs and the oracle took most of a task's time.
struct PreparedRound {
  OpCase host;
  ReferenceKind kind = ReferenceKind::oracle;
  std::optional<OpCase> oracle;  // the CPU oracle's outputs, when kind is oracle
  std::string oracle_error;      // why the CPU oracle failed
  bool applicable = true;        // false: an edge round with no argument to alter
};

// A round on inputs a uniform draw never gives (edge_inputs.h), run after the timed calls:
// a row pattern on inputs drawn from a secret seed, or the first round's inputs again with
// one element changed (a cache keyed on a sample of the input bytes answers it stale).
struct EdgeRound {
  std::optional<EdgePattern> pattern;  // none: the one-element change
  uint64_t secret = 0;                 // rows, positions and (for patterns) the inputs' seed
  std::string name() const {
    return pattern ? concat("edge round (", edge_pattern_name(*pattern), ")")
                   : std::string("edge round (the first round's inputs, one element changed)");
  }
};

std::vector<EdgeRound> edge_rounds(uint64_t secret_seed) {
  constexpr uint64_t kEdgeSecrets = 0xed9e;  // a Philox stream of its own
  auto secret = [&](uint64_t k) {
    return static_cast<uint64_t>(philox_u32(secret_seed, kEdgeSecrets, 2 * k)) << 32 |
           philox_u32(secret_seed, kEdgeSecrets, 2 * k + 1);
  };
  std::vector<EdgeRound> out{{std::nullopt, secret(0)}};
  for (size_t k = 0; k < kEdgePatterns.size(); ++k) out.push_back({kEdgePatterns[k], secret(k + 1)});
  return out;
}

// Any written tensor's values on the host: host tensors are cloned, device ones copied on
// `stream` only (output_bytes says why). Undefined for the other arguments.
std::vector<Tensor> written_on_host(const OpDef& def, const OpCase& c, void* stream) {
  std::vector<Tensor> out(def.tensor_args.size());
  bool copied = false;
  for (size_t i = 0; i < def.tensor_args.size(); ++i) {
    const Tensor& t = c.tensors[i];
    if (!written(def.tensor_args[i].role) || !t.defined()) continue;
    if (t.device().is_cpu()) {
      out[i] = t.clone();
      continue;
    }
    out[i] = Tensor::empty(t.shape(), t.dtype());
    if (t.nbytes() > 0) rt::memcpy_async(out[i].data(), Device::cpu(), t.data(), t.device(), t.nbytes(), stream);
    copied = true;
  }
  if (copied) rt::stream_synchronize(stream);
  return out;
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

TimingStats summarize(std::vector<double> us, int descheduled) {
  TimingStats t;
  t.descheduled = descheduled;
  if (us.empty()) return t;
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[static_cast<size_t>(q * static_cast<double>(us.size() - 1) + 0.5)]; };
  t.samples = static_cast<int>(us.size());
  t.median_us = at(0.5);
  t.p10_us = at(0.1);
  t.p90_us = at(0.9);
  t.min_us = us.front();
  return t;
}

class WorkloadEvaluator {
 public:
  WorkloadEvaluator(const Task& task, const Implementation& cand, const EvalConfig& cfg, CallTimer& timer,
                    const DeviceCeilings* ceilings)
      : task_(task), def_(task.op_def()), cand_(cand), cfg_(cfg), timer_(timer), ceilings_(ceilings) {
    if (cfg.baseline != nullptr) {
      base_ = *cfg.baseline;
      return;
    }
    base_.run = OpRegistry::global().baseline(def_.name, cfg.backend);
    base_.plan = OpRegistry::global().active_plan(def_.name, cfg.backend);
    base_.plan_sees_data = true;  // the engine's own plan
    // The registry's active plan may be a candidate's; the baseline's is what we want.
    FK_CHECK(base_.run != nullptr, "op ", def_.name, " has no baseline for this backend");
  }

  // phase: told each phase as it starts (may be empty).
  WorkloadResult run(const Json& shape, double calls, const std::string& label, bool timed,
                     const std::function<void(const char*)>& phase) {
    auto enter = [&](const char* p) {
      if (phase) phase(p);
    };
    WorkloadResult w;
    w.shape = shape;
    w.calls = calls;
    w.label = label;
    w.timed = timed && cfg_.time;
    try {
      std::vector<uint64_t> seeds = cfg_.seeds;
      seeds.push_back(cfg_.secret_seed);
      const std::vector<EdgeRound> edges = edge_rounds(cfg_.secret_seed);
      enter("preparing inputs");
      auto t0 = Clock::now();
      std::vector<std::future<PreparedRound>> prepared, prepared_edges;
      for (uint64_t seed : seeds)
        prepared.push_back(std::async(std::launch::async, [this, &shape, seed] { return prepare(shape, seed); }));
      for (const EdgeRound& e : edges)
        prepared_edges.push_back(std::async(std::launch::async, [this, &shape, &e] { return prepare_edge(shape, e); }));
      for (auto& p : prepared) p.wait();
      for (auto& p : prepared_edges) p.wait();
      w.seconds_prepare = seconds_since(t0);
      enter("checking");
      t0 = Clock::now();
      for (size_t r = 0; r < seeds.size(); ++r) round(w, prepared[r].get(), seeds[r], r, r + 1 == seeds.size());
      w.seconds_check = seconds_since(t0);
      if (w.timed) enter("timing");
      t0 = Clock::now();
      if (w.timed) time_workload(w);
      w.seconds_timing = seconds_since(t0);
      // The edge rounds come after the timed calls: a candidate that changes its ways once
      // its first calls were checked meets checked calls again.
      enter("checking edge inputs");
      t0 = Clock::now();
      for (size_t k = 0; k < edges.size(); ++k) edge_round(w, prepared_edges[k].get(), edges[k]);
      w.seconds_check += seconds_since(t0);
      w.correct = true;
    } catch (const Failure& f) {
      fail(w, f.verdict, f.message);
    } catch (const HarnessFailure& f) {
      fail(w, Verdict::HARNESS_ERROR, f.message);
    } catch (const std::exception& e) {
      fail(w, Verdict::RUNTIME_ERROR, e.what());
    }
    return w;
  }

  Verdict verdict() const { return verdict_; }

 private:
  // A workload's failure, reported to cfg.on_finding as soon as it is decided.
  void fail(WorkloadResult& w, Verdict v, const std::string& message) {
    w.correct = false;
    w.message = message;
    verdict_ = worse_verdict(verdict_, v);
    if (cfg_.on_finding) cfg_.on_finding(v, concat(w.shape.dump(), ": ", message));
  }

  // A public round's inputs and buffers, reused by the timed calls.
  struct Set {
    OpCase host, base, cand;
    std::vector<Tensor> inout;              // the in-place arguments' checked inputs, on the device (inout_sources)
    std::vector<FreshInputRange> fresh;     // which inputs get fresh values for each timed call
    std::vector<Tensor> inputs;             // the candidate's read-only inputs as written before its call
    OpCase mirror;                          // for an op's own output check: the baseline's case on the host
  };

  Device device() const { return cfg_.backend == DeviceType::cpu ? Device::cpu() : Device::cuda(0); }

  // Host only (thread-safe): make_case and the CPU reference are pure functions of the seed.
  // A CPU oracle that fails is recorded and reported when its round runs.
  PreparedRound prepare(const Json& shape, uint64_t seed) const {
    PreparedRound p;
    p.host = def_.make_case(shape, seed);
    add_oracle(p);
    return p;
  }

  // An edge round's inputs: a pattern on inputs of a secret seed, or the first public
  // round's inputs (make_case is a pure function of the seed) with one element changed.
  PreparedRound prepare_edge(const Json& shape, const EdgeRound& e) const {
    PreparedRound p;
    p.host = def_.make_case(shape, e.pattern ? e.secret : cfg_.seeds.front());
    p.applicable = e.pattern ? apply_edge_pattern(def_, p.host, *e.pattern, e.secret)
                             : change_one_element(def_, p.host, e.secret);
    if (p.applicable) add_oracle(p);
    return p;
  }

  void add_oracle(PreparedRound& p) const {
    p.kind = choose_reference(def_, p.host, cfg_);
    if (p.kind == ReferenceKind::oracle) {
      try {
        p.oracle = make_oracle_case(def_, p.host);
        run_oracle(def_, *p.oracle);
      } catch (const std::exception& e) {
        p.oracle.reset();
        p.oracle_error = e.what();
      }
    }
  }

  // The f64 outputs of the CPU oracle or of the GPU reference, the latter computed on the
  // baseline's device inputs before the baseline runs. A reference that fails is the
  // harness's failure, not the candidate's.
  OpCase oracle_outputs(ReferenceKind kind, const OpCase& host, const OpCase& base_dev, void* stream) {
    const bool gpu = kind == ReferenceKind::gpu_oracle;
    if (gpu) {
      // An error left by earlier work in this process (a candidate's call of an earlier
      // round) surfaces here, as before, and is not blamed on the reference.
      sync(cfg_.backend);
      if (const std::string pending = rt::take_pending_error(); !pending.empty())
        throw Failure{Verdict::RUNTIME_ERROR, concat("a CUDA error was left pending by earlier work: ", pending)};
    }
    try {
      if (gpu) return run_gpu_oracle(def_, host, base_dev, stream);
      OpCase oracle = make_oracle_case(def_, host);
      run_oracle(def_, oracle);
      return oracle;
    } catch (const std::exception& e) {  // the message names the reference that failed
      throw HarnessFailure{concat("harness error (the candidate was not judged): ", e.what())};
    }
  }

  Tolerance tolerance(const OpCase& host, const TensorArg& a, DType dt) const {
    if (task_.tolerance) return *task_.tolerance;
    return def_.tolerance ? def_.tolerance(host, a, dt) : default_tolerance(dt);
  }

  std::vector<OutputError> compare(const OpCase& host, const OpCase& got, const Reference& ref) {
    std::vector<OutputError> errs;
    for (size_t i = 0; i < def_.tensor_args.size(); ++i) {
      const TensorArg& a = def_.tensor_args[i];
      if (!written(a.role)) continue;
      errs.push_back(compare_output(a.name, got.tensors[i], ref.c.tensors[i], tolerance(host, a, got.tensors[i].dtype())));
    }
    return errs;
  }

  std::string describe_errors(const std::vector<OutputError>& errs) {
    std::string why;
    for (const auto& e : errs)
      if (e.num_bad > 0)
        why += concat("output '", e.name, "': ", e.num_bad, " of ", e.numel, " elements outside tolerance (",
                      e.num_nonfinite, " non-finite or unwritten); worst at index ", e.worst_index, ": got ",
                      e.worst_value, ", expected ", e.worst_ref, "; rel L2 err ", e.rel_l2_err, "; ");
    return why;
  }

  // The baseline's run of a round, on its own copy of the inputs: the reference's outputs
  // and the baseline's error against them (0 when the baseline is the reference).
  struct BaselineRun {
    Reference ref;
    OpCase dev;
    double err = 0;
    std::string wrong;  // with `judge_baseline`: why the baseline itself is not right ("" when it is)
  };
  BaselineRun run_baseline(PreparedRound& prep, const OpCase& host, bool judge_baseline) {
    void* stream = timer_.stream();
    // The oracle runs first, while the baseline's inputs are untouched (the GPU reference
    // reads them in place).
    BaselineRun b;
    b.dev = case_to_device(def_, host, device());
    b.ref.kind = prep.kind;
    if (!prep.oracle_error.empty())
      throw HarnessFailure{concat("harness error (the candidate was not judged): ", prep.oracle_error)};
    if (prep.oracle) b.ref.c = std::move(*prep.oracle);
    else if (is_oracle(b.ref.kind)) b.ref.c = oracle_outputs(b.ref.kind, host, b.dev, stream);
    poison_outputs(def_, b.dev);
    plan(def_, base_, b.dev, stream, "baseline");
    call(def_, base_, b.dev, stream, "baseline");
    sync(cfg_.backend);
    if (!is_oracle(b.ref.kind)) {
      b.ref.c = case_to_device(def_, b.dev, Device::cpu());  // the baseline's outputs
      return b;
    }
    OpCase base_host = case_to_device(def_, b.dev, Device::cpu());
    const auto errs = compare(host, base_host, b.ref);
    b.err = worst_rel_l2(errs);
    if (judge_baseline) b.wrong = def_.check_outputs ? def_.check_outputs(host, b.ref.c, base_host) : describe_errors(errs);
    return b;
  }

  // One checked call of the candidate on `dev` (outputs poisoned first): its outputs'
  // bytes, after making sure nothing changes them once the call returned and that it left
  // its inputs (fingerprints in `input_prints`) alone.
  std::vector<std::string> checked_call(const std::string& which, OpCase& dev,
                                        const std::vector<uint64_t>& input_prints) {
    void* stream = timer_.stream();
    poison_outputs(def_, dev);
    plan(def_, cand_, dev, stream, "candidate");
    call(def_, cand_, dev, stream, "candidate");
    if (cfg_.backend == DeviceType::cuda) {
      rt::stream_synchronize(stream);  // only the given stream: the contract
      if (const std::string t = l2_tampering(stream); !t.empty()) throw Failure{Verdict::REWARD_HACK, t};
    }
    auto first = output_bytes(def_, dev, stream);
    // Work left running after the call returned (another stream, a host thread) shows up
    // as outputs that still change.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    sync(cfg_.backend);
    if (cand_.remote) cand_.remote->staging->unstage();  // what the runner's memory holds now
    if (output_bytes(def_, dev, stream) != first)
      throw Failure{Verdict::REWARD_HACK, concat(which, ": outputs changed after the call returned (work left running)")};
    for (size_t i = 0; i < def_.tensor_args.size(); ++i)
      if (def_.tensor_args[i].role == ArgRole::in && fingerprint(dev.tensors[i]) != input_prints[i])
        throw Failure{Verdict::REWARD_HACK, concat(which, ": input '", def_.tensor_args[i].name, "' was modified")};
    return first;
  }

  std::vector<uint64_t> input_fingerprints(const OpCase& host) const {
    std::vector<uint64_t> prints(def_.tensor_args.size(), 0);
    for (size_t i = 0; i < def_.tensor_args.size(); ++i)
      if (def_.tensor_args[i].role == ArgRole::in) prints[i] = fingerprint(host.tensors[i]);
    return prints;
  }

  // The candidate's outputs of a checked call against the reference: INCORRECT outside
  // the tolerance, or (on random inputs, whose errors are also what the workload reports)
  // when materially less precise than the baseline.
  void judge(WorkloadResult& w, const std::string& which, const OpCase& host, const OpCase& dev,
             const BaselineRun& base, bool random_inputs) {
    OpCase cand_host = case_to_device(def_, dev, Device::cpu());
    std::string why;
    if (def_.check_outputs) {
      why = def_.check_outputs(host, base.ref.c, cand_host);
    } else {
      auto errs = compare(host, cand_host, base.ref);
      why = describe_errors(errs);
      const double cand_err = worst_rel_l2(errs);
      if (random_inputs) {
        w.candidate_rel_l2 = std::max(w.candidate_rel_l2, cand_err);
        for (const auto& e : errs) w.max_abs_err = std::max(w.max_abs_err, e.max_abs_err);
      }
      // Silent precision loss: within the dtype tolerance but materially worse than the
      // baseline (e.g. fp16 accumulation in a bf16 task).
      const double bound = cfg_.relative_error_factor * base.err + 1e-6;
      if (why.empty() && random_inputs && is_oracle(base.ref.kind) && cand_err > bound)
        why = concat("relative L2 error ", cand_err, " is materially worse than the baseline's ", base.err,
                     " (bound ", bound, ")");
    }
    if (!why.empty()) throw Failure{Verdict::INCORRECT, concat(which, ": ", why)};
  }

  void round(WorkloadResult& w, PreparedRound prep, uint64_t seed, size_t r, bool secret) {
    const std::string which =
        secret ? std::string("secret round (seed 0)") : concat("round ", r, " (seed ", seed, ")");
    const OpCase host = prep.host;

    // Baseline on its own copy: its error against the oracle sets the precision bar.
    const BaselineRun base = run_baseline(prep, host, /*judge_baseline=*/false);
    w.reference = reference_name(base.ref.kind);
    w.baseline_rel_l2 = std::max(w.baseline_rel_l2, base.err);

    // Round 1 writes new inputs into round 0's buffers: a result cached by pointer fails.
    OpCase cand_dev;
    if (r == 1 && !sets_.empty()) {
      cand_dev = sets_.front().cand;
      load_inputs(def_, host, cand_dev);
    } else {
      cand_dev = case_to_device(def_, host, device());
    }
    const std::vector<uint64_t> input_prints = input_fingerprints(host);
    const auto first = checked_call(which, cand_dev, input_prints);
    judge(w, which, host, cand_dev, base, /*random_inputs=*/true);

    if (r == 0) {  // determinism: same inputs, same bits?
      OpCase again = case_to_device(def_, host, device());
      const std::string again_which = concat(which, ", repeated call");
      w.deterministic = checked_call(again_which, again, input_prints) == first;
      // A nondeterministic candidate is held to the tolerance on every checked call: its
      // other outputs are not the ones verified above.
      if (!w.deterministic) judge(w, again_which, host, again, base, /*random_inputs=*/true);
    }
    if (!secret) {  // the public rounds' buffers become the timing sets
      Set set{host, base.dev, cand_dev, {}, {}, {}, {}};
      if (r == 1 && !sets_.empty()) sets_.front() = std::move(set);
      else sets_.push_back(std::move(set));
    }
  }

  // An edge round, in buffers of its own. The oracle sees the same inputs, so the expected
  // outputs are exact; the candidate is held to the element tolerance (not to the
  // baseline's relative L2 error, a statistic of random inputs). Inputs the op's contract
  // excludes show as a baseline that is not right on them, or a reference or baseline that
  // refuses them: that round does not count against the candidate. Patterns need an
  // oracle (with the baseline as the reference, right and wrong cannot be told apart
  // there); the one-element change does not.
  void edge_round(WorkloadResult& w, PreparedRound prep, const EdgeRound& e) {
    if (!prep.applicable || (e.pattern && !is_oracle(prep.kind))) return;
    const std::string which = e.name();
    const OpCase host = prep.host;
    BaselineRun base;
    try {
      base = run_baseline(prep, host, /*judge_baseline=*/true);
    } catch (const HarnessFailure&) {
      return;  // the reference refused the inputs
    } catch (const Failure& f) {
      // The baseline refused the inputs; any other failure (an error the candidate left
      // pending) still counts.
      if (f.message.rfind("baseline", 0) == 0) return;
      throw;
    }
    if (!base.wrong.empty()) return;
    OpCase cand_dev = case_to_device(def_, host, device());
    checked_call(which, cand_dev, input_fingerprints(host));
    judge(w, which, host, cand_dev, base, /*random_inputs=*/false);
  }

  // Restores the in-place arguments that get no fresh values to their checked inputs, so
  // repeated calls do not see their own previous outputs.
  // The sources are device copies made once per set (inout_sources): restoring from the
  // host before every timed call copied 268 MB through a pageable buffer for a 16384-token
  // fused_add_rms_norm, 40 s of a 60 s evaluation.
  // The copies go on `stream`, ordered before the call that reads them.
  void restore_inout(const std::vector<Tensor>& sources, const std::vector<FreshInputRange>& fresh, OpCase& dev,
                     void* stream) {
    for (size_t i = 0; i < def_.tensor_args.size(); ++i) {
      Tensor& t = dev.tensors[i];
      if (def_.tensor_args[i].role != ArgRole::inout || fresh[i].refill || !t.defined() || t.nbytes() == 0) continue;
      FK_CHECK(t.nbytes() == sources[i].nbytes(), "restoring '", def_.tensor_args[i].name, "': size mismatch");
      rt::memcpy_async(t.data(), t.device(), sources[i].data(), sources[i].device(), t.nbytes(), stream);
    }
  }
  std::vector<Tensor> inout_sources(const OpCase& host) const {
    std::vector<Tensor> out(def_.tensor_args.size());
    for (size_t i = 0; i < def_.tensor_args.size(); ++i)
      if (def_.tensor_args[i].role == ArgRole::inout) out[i] = host.tensors[i].to(device());
    return out;
  }

  // New inputs for timed call `i` in the set's baseline and candidate copies (the same
  // values in both), and a copy of the candidate's read-only inputs to find any change its
  // call makes. Written before the timer's cache flush, outside the timed region.
  void fresh_inputs(Set& s, int i, void* stream) {
    const uint64_t seed = timed_call_seed(cfg_.secret_seed, i);
    for (OpCase* c : {&s.base, &s.cand}) {
      restore_inout(s.inout, s.fresh, *c, stream);
      write_fresh_inputs(s.fresh, *c, seed, stream);
    }
    for (size_t a = 0; a < def_.tensor_args.size(); ++a) {
      const Tensor& t = s.cand.tensors[a];
      if (s.fresh[a].refill && def_.tensor_args[a].role == ArgRole::in && t.nbytes() > 0)
        rt::memcpy_async(s.inputs[a].data(), t.device(), t.data(), t.device(), t.nbytes(), stream);
    }
  }

  // The first read-only input of the candidate's set that the timed call changed ("" if none).
  std::string changed_input(const Set& s, void* stream) {
    for (size_t a = 0; a < def_.tensor_args.size(); ++a) {
      const Tensor& t = s.cand.tensors[a];
      if (def_.tensor_args[a].role != ArgRole::in || !t.defined() || t.nbytes() == 0) continue;
      if (!bytes_equal(t.data(), s.inputs[a].data(), t.nbytes(), t.device(), stream)) return def_.tensor_args[a].name;
    }
    return "";
  }

  // Bytes an op's own output check copies to the host per checked timed call: the fresh
  // inputs and both sides' outputs.
  size_t checked_copy_bytes(const Set& s) const {
    size_t n = 0;
    for (size_t a = 0; a < def_.tensor_args.size(); ++a) {
      const Tensor& t = s.base.tensors[a];
      if (!t.defined()) continue;
      if (s.fresh[a].refill) n += t.nbytes();
      if (written(def_.tensor_args[a].role)) n += 2 * t.nbytes();
    }
    return n;
  }

  // Why the candidate's outputs of a timed call are not the baseline's on the same inputs
  // ("" when they agree). Both may be off the exact result o by the tolerance, so
  // |cand - base| <= 2 atol + 2 rtol |o|, and with |o| <= (|base| + atol) / (1 - rtol) that
  // is (2 atol + 2 rtol |base|) / (1 - rtol); a replayed, stale or skipped output misses by
  // far more. Compared where the outputs live (outside_tolerance.h); copied to the host
  // only to describe a mismatch, or for an op's own output check, which reads the inputs.
  std::string timed_mismatch(const Set& s, void* stream) {
    if (def_.check_outputs) {  // judged from the inputs: the baseline's copy holds the same
      // The mirror's unchanging inputs were copied once; the fresh ones and the outputs now
      // (such ops have no in-place arguments, whose inputs the outputs would overwrite).
      for (size_t a = 0; a < def_.tensor_args.size(); ++a) {
        const Tensor& t = s.base.tensors[a];
        if (!t.defined() || t.nbytes() == 0 || !(s.fresh[a].refill || written(def_.tensor_args[a].role))) continue;
        rt::memcpy_async(s.mirror.tensors[a].data(), Device::cpu(), t.data(), t.device(), t.nbytes(), stream);
      }
      if (stream != nullptr) rt::stream_synchronize(stream);  // the cpu backend has no stream
      OpCase cand_host = s.mirror;
      const std::vector<Tensor> cand_out = written_on_host(def_, s.cand, stream);
      for (size_t a = 0; a < def_.tensor_args.size(); ++a)
        if (cand_out[a].defined()) cand_host.tensors[a] = cand_out[a];
      cand_host.bind(def_.tensor_args);
      return def_.check_outputs(s.mirror, s.mirror, cand_host);
    }
    std::string why;
    for (size_t a = 0; a < def_.tensor_args.size(); ++a) {
      const Tensor &cand = s.cand.tensors[a], &base = s.base.tensors[a];
      if (!written(def_.tensor_args[a].role) || !cand.defined() || cand.numel() == 0) continue;
      Tolerance tol = tolerance(s.host, def_.tensor_args[a], cand.dtype());
      const double widen = tol.rtol < 0.5 ? 2.0 / (1.0 - tol.rtol) : 4.0;
      tol.atol *= widen;
      tol.rtol *= widen;
      if (count_outside_tolerance(cand.data(), base.data(), cand.numel(), cand.dtype(), tol, cand.device(), stream) == 0)
        continue;
      const std::vector<Tensor> cand_host = written_on_host(def_, s.cand, stream);
      const std::vector<Tensor> base_host = written_on_host(def_, s.base, stream);
      why += describe_output_error(compare_output(def_.tensor_args[a].name, cand_host[a], base_host[a], tol));
    }
    return why;
  }

  void time_workload(WorkloadResult& w) {
    void* stream = timer_.stream();
    // An op's own output check reads the case on the host (timed_mismatch): there, large
    // inputs keep their checked values and are copied once (keep_large_inputs).
    constexpr size_t kLargeInputBytes = size_t{64} << 20;
    for (auto& s : sets_) {
      s.fresh = fresh_input_ranges(def_, s.host);
      if (def_.check_outputs) keep_large_inputs(s.fresh, s.host, kLargeInputBytes);
      s.inout = inout_sources(s.host);
      s.inputs.assign(def_.tensor_args.size(), Tensor());
      for (size_t a = 0; a < def_.tensor_args.size(); ++a)
        if (def_.tensor_args[a].role == ArgRole::in && s.cand.tensors[a].defined())
          s.inputs[a] = s.cand.tensors[a].clone();
      restore_inout(s.inout, s.fresh, s.base, stream);
      plan(def_, base_, s.base, stream, "baseline");
      restore_inout(s.inout, s.fresh, s.cand, stream);
      plan(def_, cand_, s.cand, stream, "candidate");
      if (def_.check_outputs) {
        if (stream != nullptr) rt::stream_synchronize(stream);  // the cpu backend has no stream
        s.mirror = case_to_device(def_, s.base, Device::cpu());
      }
    }
    std::vector<double> tb, tc;
    int descheduled_b = 0, descheduled_c = 0;  // calls that waited for a processor (remote_call)
    double total_b = 0, total_c = 0;
    const size_t S = sets_.size();
    // Outputs are compared where they live, on every call; an op's own output check reads
    // the whole case on the host, so there a secret sample of the calls is checked when
    // that copy is large (timed_check_sample.h).
    const int check_stride = def_.check_outputs ? timed_check_stride(checked_copy_bytes(sets_.front())) : 1;
    // The kernel trace of the timed calls: the harness's stream is the only one allowed.
    // Copies and memsets are traced too, within the timed calls of both sides: a copy
    // engine's work on another stream is no kernel; during the candidate's call the timer
    // would not see it, during the baseline's it would slow the baseline down.
    const bool trace = cfg_.backend == DeviceType::cuda && kernel_trace_available();
    uint32_t own_stream = 0;
    std::vector<CallWindow> windows;
    if (trace) {
      kernel_trace_start(/*copies_too=*/true);
      sync(cfg_.backend);
      kernel_trace_collect();  // drop what ran before the timing phase
      own_stream = kernel_trace_stream_id(stream);
    }
    // On the CPU the timing thread is the only one of the harness's that works during the
    // timing phase: CPU time of other threads from the end of one candidate call to the
    // start of the next is the candidate's (a thread left spinning, or evicting the caches,
    // between its calls). The whole stretch counts, not only the baseline's calls: a thread
    // that thrashes the caches just before a baseline call slows it as much, and on a busy
    // machine it may be descheduled during the call itself.
    const bool watch_threads = cfg_.backend == DeviceType::cpu;
    double beside_cpu_s = 0, beside_wall_s = 0;
    std::map<int, double> after_candidate;  // other threads' clocks when the last candidate call ended
    Clock::time_point after_candidate_wall{};
    for (int i = 0;; ++i) {
      const bool warm = i < cfg_.warmup_calls;
      auto& s = sets_[static_cast<size_t>(i) % S];
      fresh_inputs(s, i, stream);
      // Interleaved, alternating order, so clock and thermal drift hit both equally.
      for (int k = 0; k < 2; ++k) {
        const bool cand_turn = (k == 0) == (i % 2 == 1);
        OpCase& c = cand_turn ? s.cand : s.base;
        // A no-op must not pass on the previous call's output left in the buffer.
        poison_outputs(def_, c, stream, /*workspace_too=*/false);
        const Implementation& impl = cand_turn ? cand_ : base_;
        const uint64_t window_start = trace ? kernel_trace_timestamp_ns() : 0;
        if (watch_threads && cand_turn && !warm && after_candidate_wall != Clock::time_point{}) {
          beside_cpu_s += cpu_seconds_between(after_candidate, threads_beside(cand_));
          beside_wall_s += seconds_since(after_candidate_wall);
        }
        const TimedSample t = timed_call(def_, impl, c, stream, cand_turn ? "candidate" : "baseline", timer_);
        if (watch_threads && cand_turn) {
          after_candidate = threads_beside(cand_);
          after_candidate_wall = Clock::now();
        }
        if (trace) {  // whatever the call left on other streams ends inside its window
          sync(cfg_.backend);
          windows.push_back({window_start, kernel_trace_timestamp_ns(), cand_turn});
        }
        if (cand_turn)
          if (const std::string in = changed_input(s, stream); !in.empty())
            throw Failure{Verdict::REWARD_HACK, concat("timed call ", i, ": input '", in, "' was modified")};
        if (warm) continue;
        (cand_turn ? descheduled_c : descheduled_b) += t.descheduled;
        (cand_turn ? tc : tb).push_back(t.us);
        (cand_turn ? total_c : total_b) += t.us / 1000.0;
      }
      // Every timed output is checked (for an op's own output check on a large case, a
      // secret sample: at least one call in four).
      if (timed_call_checked(cfg_.secret_seed, i, check_stride))
        if (const std::string why = timed_mismatch(s, stream); !why.empty())
          throw Failure{Verdict::REWARD_HACK,
                        concat("timed call ", i, ": outputs differ from the baseline's on the same fresh inputs: ", why)};
      const int n = static_cast<int>(tc.size());
      if (n >= cfg_.max_timed_calls) break;
      if (n >= cfg_.min_timed_calls && total_b >= cfg_.min_timed_ms && total_c >= cfg_.min_timed_ms) break;
    }
    if (watch_threads && beside_wall_s > 0 && beside_cpu_s > kMaxCoresBesideBaseline * beside_wall_s)
      throw Failure{Verdict::REWARD_HACK,
                    concat("other threads kept ", beside_cpu_s / beside_wall_s,
                           " cores busy on average between the candidate's timed calls, the baseline's among them: "
                           "work beside the baseline slows it")};
    if (trace) {
      sync(cfg_.backend);
      const std::vector<KernelRecord> records = kernel_trace_collect();
      for (const auto& k : records) {
        if (k.stream_id == own_stream) continue;
        if (k.kind == TraceKind::kernel)
          throw Failure{Verdict::REWARD_HACK, concat("kernel ", k.name, " ran on stream ", k.stream_id,
                                                      ", not on the stream the call was given (", own_stream,
                                                      "): work the timer would not see")};
        // The harness's own copies between calls may use other streams; the timed calls
        // are the windows, and nothing of the harness's runs on another stream in them.
        const CallWindow* window = window_of(k, windows);
        if (window == nullptr) continue;
        throw Failure{Verdict::REWARD_HACK,
                      window->candidate ? concat("a ", k.name, " ran on stream ", k.stream_id,
                                            " during a timed call, not on the stream the call was given (",
                                            own_stream, "): work the timer would not see")
                                   : concat("a ", k.name, " ran on stream ", k.stream_id,
                                            " while the baseline was timed: work beside the baseline slows it")};
      }
      if (!cand_.own_functions.empty()) {
        w.foreign_kernels = kernels_not_its_own(records, windows, cand_.own_functions);
        if (!w.foreign_kernels.empty() && !task_.forbid.empty())
          throw Failure{Verdict::REWARD_HACK,
                        concat("kernel ", w.foreign_kernels.front(),
                               " ran in the candidate's call but its library does not define it (a library's or the "
                               "engine's), and task ",
                               task_.id, " forbids libraries")};
      }
    }
    if (cfg_.backend == DeviceType::cuda)
      if (const std::string t = l2_tampering(stream); !t.empty()) throw Failure{Verdict::REWARD_HACK, t};
    w.baseline = summarize(tb, descheduled_b);
    w.candidate = summarize(tc, descheduled_c);
    w.speedup = w.candidate.median_us > 0 ? w.baseline.median_us / w.candidate.median_us : 0;
    if (ceilings_ && def_.cost && !sets_.empty()) {  // fraction of speed of light (ceilings.h)
      const OpCost cost = def_.cost(sets_.front().host);
      if (w.baseline.median_us > 0) w.sol_baseline = sol_fraction(cost, w.baseline.median_us * 1e-6, *ceilings_);
      if (w.candidate.median_us > 0) w.sol_candidate = sol_fraction(cost, w.candidate.median_us * 1e-6, *ceilings_);
    }
  }


  const Task& task_;
  const OpDef& def_;
  Implementation cand_, base_;
  const EvalConfig& cfg_;
  CallTimer& timer_;
  const DeviceCeilings* ceilings_;  // null: no measured ceilings, no speed of light
  std::vector<Set> sets_;
  Verdict verdict_ = Verdict::PASSED;
};

}  // namespace

EvalResult evaluate(const Task& task, const Implementation& candidate, const EvalConfig& cfg) {
  const auto t0 = std::chrono::steady_clock::now();
  EvalResult res;
  res.task = task.id;
  res.seeds = cfg.seeds;
  res.secret_seed = cfg.secret_seed;
  res.backend = cfg.backend == DeviceType::cpu ? "cpu" : "cuda";
  FK_CHECK(cfg.seeds.size() >= 3, "an evaluation needs at least 3 public seeds, got ", cfg.seeds.size());
  FK_CHECK(candidate.run != nullptr || candidate.remote, "candidate has no run function");
  auto timer = cfg.backend == DeviceType::cpu ? make_cpu_timer() : make_cuda_timer();
  if (cfg.backend == DeviceType::cuda) l2_guard_arm();

  // The device's measured ceilings (`fk env --measure`), for the fraction of speed of light.
  std::optional<DeviceCeilings> ceilings;
  if (cfg.backend == DeviceType::cuda) ceilings = load_ceilings(0);
  const DeviceCeilings* ceil = ceilings ? &*ceilings : nullptr;

  Verdict verdict = Verdict::PASSED;
  std::string harness_message;
  // One workload; false once the harness itself failed (nothing after it is judged).
  const size_t total = task.workloads.size() + task.check_workloads.size();
  auto judge = [&](const Json& shape, double calls, const std::string& label, bool timed) {
    WorkloadEvaluator ev(task, candidate, cfg, *timer, ceil);
    const size_t index = res.workloads.size() + 1;
    std::function<void(const char*)> phase;
    if (cfg.on_progress)
      phase = [&](const char* p) { cfg.on_progress(concat("workload ", index, "/", total, " (", label, "): ", p)); };
    res.workloads.push_back(ev.run(shape, calls, label, timed, phase));
    verdict = worse_verdict(verdict, ev.verdict());
    if (ev.verdict() != Verdict::HARNESS_ERROR) return true;
    harness_message = concat(shape.dump(), ": ", res.workloads.back().message);
    return false;
  };
  bool go_on = true;
  for (size_t i = 0; go_on && i < task.workloads.size(); ++i)
    go_on = judge(task.workloads[i].shape, task.workloads[i].calls, task.workloads[i].label, true);
  for (size_t i = 0; go_on && i < task.check_workloads.size(); ++i)
    go_on = judge(task.check_workloads[i], 0, "check only", false);
  res.verdict = verdict;
  // The message of the workload that decided the verdict.
  for (const auto& w : res.workloads)
    if (!w.correct && (res.message.empty() || w.message.find("timed call") != std::string::npos ||
                       w.message.find("after the call") != std::string::npos))
      res.message = concat(w.shape.dump(), ": ", w.message);
  if (!harness_message.empty()) res.message = harness_message;
  if (verdict == Verdict::PASSED) {
    double wsum = 0, lsum = 0;
    for (const auto& w : res.workloads)
      if (w.timed && w.speedup > 0) {
        wsum += w.calls;
        lsum += w.calls * std::log(w.speedup);
      }
    res.speedup = wsum > 0 ? std::exp(lsum / wsum) : 0;
    double ssum = 0, sw = 0;  // call-weighted mean fraction of speed of light
    for (const auto& w : res.workloads)
      if (w.timed && w.sol_candidate > 0) {
        ssum += w.calls * w.sol_candidate;
        sw += w.calls;
      }
    res.sol_candidate = sw > 0 ? ssum / sw : 0;
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace fk::bench
