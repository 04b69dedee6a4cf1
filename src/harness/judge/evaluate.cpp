#include "harness/judge/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <optional>
#include <thread>

#include "harness/check/bytes_equal.h"
#include "harness/time/call_timer.h"
#include "harness/device/ceilings.h"
#include "harness/check/gpu_oracle.h"
#include "harness/time/guardrails.h"
#include "harness/time/kernel_trace.h"
#include "harness/check/op_check.h"
#include "harness/check/reference_choice.h"
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

// The verdict that explains more: a cheat outranks a crash outranks a wrong answer.
Verdict worse(Verdict a, Verdict b) {
  auto rank = [](Verdict v) {
    switch (v) {
      case Verdict::PASSED: return 0;
      case Verdict::INCORRECT: return 1;
      case Verdict::TIMEOUT: return 2;
      case Verdict::RUNTIME_ERROR: return 3;
      case Verdict::COMPILE_ERROR: return 4;
      case Verdict::REWARD_HACK: return 5;
      case Verdict::HARNESS_ERROR: return 6;  // no verdict on the candidate at all
    }
    return 0;
  };
  return rank(b) > rank(a) ? b : a;
}

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
    FK_CHECK(host.tensors[i].shape() == dev.tensors[i].shape(), "input reuse needs identical shapes");
    dev.tensors[i].copy_from(host.tensors[i]);
  }
}

void call(const Implementation& impl, const OpCase& c, void* stream, const char* who) {
  const fk_status s = impl.run(c.args_ptr(), stream);
  if (s != FK_OK) throw Failure{Verdict::RUNTIME_ERROR, concat(who, " returned ", status_name(s), ": ", last_error_message())};
}

void plan(const Implementation& impl, const OpCase& c, void* stream, const char* who) {
  if (!impl.plan) return;
  const fk_status s = impl.plan(c.args_ptr(), stream);
  if (s != FK_OK) throw Failure{Verdict::RUNTIME_ERROR, concat(who, " plan returned ", status_name(s), ": ", last_error_message())};
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
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Snapshots of the outputs a round verified, on their own device, and the comparison of a
// later call's outputs with them there (bytes_equal.h says why not on the host).
std::vector<Tensor> snapshot_outputs(const OpDef& def, const OpCase& c) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < def.tensor_args.size(); ++i)
    if (written(def.tensor_args[i].role) && c.tensors[i].defined() && c.tensors[i].nbytes() > 0)
      out.push_back(c.tensors[i].clone());
  return out;
}

bool outputs_match(const OpDef& def, const OpCase& c, const std::vector<Tensor>& expected, void* stream) {
  size_t k = 0;
  for (size_t i = 0; i < def.tensor_args.size(); ++i) {
    if (!written(def.tensor_args[i].role) || !c.tensors[i].defined() || c.tensors[i].nbytes() == 0) continue;
    const Tensor& t = c.tensors[i];
    if (k >= expected.size() || expected[k].nbytes() != t.nbytes()) return false;
    if (!bytes_equal(t.data(), expected[k].data(), t.nbytes(), t.device(), stream)) return false;
    ++k;
  }
  return k == expected.size();
}

TimingStats summarize(std::vector<double> us) {
  TimingStats t;
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
    base_.run = OpRegistry::global().baseline(def_.name, cfg.backend);
    base_.plan = OpRegistry::global().active_plan(def_.name, cfg.backend);
    // The registry's active plan may be a candidate's; the baseline's is what we want.
    FK_CHECK(base_.run != nullptr, "op ", def_.name, " has no baseline for this backend");
  }

  WorkloadResult run(const Json& shape, double calls, const std::string& label, bool timed) {
    WorkloadResult w;
    w.shape = shape;
    w.calls = calls;
    w.label = label;
    w.timed = timed && cfg_.time;
    try {
      std::vector<uint64_t> seeds = cfg_.seeds;
      seeds.push_back(cfg_.secret_seed);
      auto t0 = Clock::now();
      std::vector<std::future<PreparedRound>> prepared;
      for (uint64_t seed : seeds)
        prepared.push_back(std::async(std::launch::async, [this, &shape, seed] { return prepare(shape, seed); }));
      for (auto& p : prepared) p.wait();
      w.seconds_prepare = seconds_since(t0);
      t0 = Clock::now();
      for (size_t r = 0; r < seeds.size(); ++r) round(w, prepared[r].get(), seeds[r], r, r + 1 == seeds.size());
      w.seconds_check = seconds_since(t0);
      w.correct = true;
      t0 = Clock::now();
      if (w.timed) time_workload(w);
      w.seconds_timing = seconds_since(t0);
    } catch (const Failure& f) {
      w.correct = false;
      w.message = f.message;
      verdict_ = worse(verdict_, f.verdict);
    } catch (const HarnessFailure& f) {
      w.correct = false;
      w.message = f.message;
      verdict_ = worse(verdict_, Verdict::HARNESS_ERROR);
    } catch (const std::exception& e) {
      w.correct = false;
      w.message = e.what();
      verdict_ = worse(verdict_, Verdict::RUNTIME_ERROR);
    }
    return w;
  }

  Verdict verdict() const { return verdict_; }

 private:
  Device device() const { return cfg_.backend == DeviceType::cpu ? Device::cpu() : Device::cuda(0); }

  // Host only (thread-safe): make_case and the CPU reference are pure functions of the seed.
  // A CPU oracle that fails is recorded and reported when its round runs.
  PreparedRound prepare(const Json& shape, uint64_t seed) const {
    PreparedRound p;
    p.host = def_.make_case(shape, seed);
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
    return p;
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

  std::vector<OutputError> compare(const OpCase& host, const OpCase& got, const Reference& ref) {
    std::vector<OutputError> errs;
    for (size_t i = 0; i < def_.tensor_args.size(); ++i) {
      const TensorArg& a = def_.tensor_args[i];
      if (!written(a.role)) continue;
      const DType dt = got.tensors[i].dtype();
      Tolerance tol = task_.tolerance ? *task_.tolerance
                                      : (def_.tolerance ? def_.tolerance(host, a, dt) : default_tolerance(dt));
      errs.push_back(compare_output(a.name, got.tensors[i], ref.c.tensors[i], tol));
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

  void round(WorkloadResult& w, PreparedRound prep, uint64_t seed, size_t r, bool secret) {
    const std::string which = secret ? "secret round" : concat("round ", r);
    const OpCase host = prep.host;
    void* stream = timer_.stream();

    // Baseline on its own copy: its error against the oracle sets the precision bar. The
    // oracle runs first, while the baseline's inputs are untouched (the GPU reference reads
    // them in place).
    OpCase base_dev = case_to_device(def_, host, device());
    Reference ref;
    ref.kind = prep.kind;
    if (!prep.oracle_error.empty())
      throw HarnessFailure{concat("harness error (the candidate was not judged): ", prep.oracle_error)};
    if (prep.oracle) ref.c = std::move(*prep.oracle);
    else if (is_oracle(ref.kind)) ref.c = oracle_outputs(ref.kind, host, base_dev, stream);
    poison_outputs(def_, base_dev);
    plan(base_, base_dev, stream, "baseline");
    call(base_, base_dev, stream, "baseline");
    sync(cfg_.backend);
    if (!is_oracle(ref.kind)) ref.c = case_to_device(def_, base_dev, Device::cpu());  // the baseline's outputs
    w.reference = reference_name(ref.kind);
    double base_err = 0;
    if (is_oracle(ref.kind)) {
      OpCase base_host = case_to_device(def_, base_dev, Device::cpu());
      base_err = worst_rel_l2(compare(host, base_host, ref));
      w.baseline_rel_l2 = std::max(w.baseline_rel_l2, base_err);
    }

    // Round 1 writes new inputs into round 0's buffers: a result cached by pointer fails.
    OpCase cand_dev;
    if (r == 1 && !sets_.empty()) {
      cand_dev = sets_.front().cand;
      load_inputs(def_, host, cand_dev);
    } else {
      cand_dev = case_to_device(def_, host, device());
    }
    std::vector<uint64_t> input_prints(def_.tensor_args.size(), 0);
    for (size_t i = 0; i < def_.tensor_args.size(); ++i)
      if (def_.tensor_args[i].role == ArgRole::in) input_prints[i] = fingerprint(host.tensors[i]);

    poison_outputs(def_, cand_dev);
    plan(cand_, cand_dev, stream, "candidate");
    call(cand_, cand_dev, stream, "candidate");
    if (cfg_.backend == DeviceType::cuda) {
      rt::stream_synchronize(stream);  // only the given stream: the contract
      if (const std::string t = l2_tampering(stream); !t.empty()) throw Failure{Verdict::REWARD_HACK, t};
    }
    const auto first = output_bytes(def_, cand_dev, stream);
    // Work left running after the call returned (another stream, a host thread) shows up
    // as outputs that still change.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    sync(cfg_.backend);
    if (output_bytes(def_, cand_dev, stream) != first)
      throw Failure{Verdict::REWARD_HACK, concat(which, ": outputs changed after the call returned (work left running)")};
    for (size_t i = 0; i < def_.tensor_args.size(); ++i)
      if (def_.tensor_args[i].role == ArgRole::in && fingerprint(cand_dev.tensors[i]) != input_prints[i])
        throw Failure{Verdict::REWARD_HACK, concat(which, ": input '", def_.tensor_args[i].name, "' was modified")};

    OpCase cand_host = case_to_device(def_, cand_dev, Device::cpu());
    std::string why;
    if (def_.check_outputs) {
      why = def_.check_outputs(host, ref.c, cand_host);
    } else {
      auto errs = compare(host, cand_host, ref);
      why = describe_errors(errs);
      const double cand_err = worst_rel_l2(errs);
      w.candidate_rel_l2 = std::max(w.candidate_rel_l2, cand_err);
      for (const auto& e : errs) w.max_abs_err = std::max(w.max_abs_err, e.max_abs_err);
      // Silent precision loss: within the dtype tolerance but materially worse than the
      // baseline (e.g. fp16 accumulation in a bf16 task).
      const double bound = cfg_.relative_error_factor * base_err + 1e-6;
      if (why.empty() && is_oracle(ref.kind) && cand_err > bound)
        why = concat("relative L2 error ", cand_err, " is materially worse than the baseline's ", base_err,
                     " (bound ", bound, ")");
    }
    if (!why.empty()) throw Failure{Verdict::INCORRECT, concat(which, " (seed ", secret ? 0 : seed, "): ", why)};

    if (r == 0) {  // determinism: same inputs, same bits?
      OpCase again = case_to_device(def_, host, device());
      poison_outputs(def_, again);
      plan(cand_, again, stream, "candidate");
      call(cand_, again, stream, "candidate");
      sync(cfg_.backend);
      w.deterministic = output_bytes(def_, again, stream) == first;
    }
    if (!secret) {  // the public rounds' buffers become the timing sets
      Set set{host, base_dev, cand_dev, snapshot_outputs(def_, cand_dev), {}};
      if (r == 1 && !sets_.empty()) sets_.front() = std::move(set);
      else sets_.push_back(std::move(set));
    }
  }

  // Restores in-place arguments to their pre-call values so repeated calls see the
  // checked inputs (not their own previous outputs).
  // The sources are device copies made once per set (inout_sources): restoring from the
  // host before every timed call copied 268 MB through a pageable buffer for a 16384-token
  // fused_add_rms_norm, 40 s of a 60 s evaluation.
  void restore_inout(const std::vector<Tensor>& sources, OpCase& dev) {
    for (size_t i = 0; i < def_.tensor_args.size(); ++i)
      if (def_.tensor_args[i].role == ArgRole::inout) dev.tensors[i].copy_from(sources[i]);
  }
  std::vector<Tensor> inout_sources(const OpCase& host) const {
    std::vector<Tensor> out(def_.tensor_args.size());
    for (size_t i = 0; i < def_.tensor_args.size(); ++i)
      if (def_.tensor_args[i].role == ArgRole::inout) out[i] = host.tensors[i].to(device());
    return out;
  }

  void time_workload(WorkloadResult& w) {
    void* stream = timer_.stream();
    for (auto& s : sets_) {
      s.inout = inout_sources(s.host);
      restore_inout(s.inout, s.base);
      plan(base_, s.base, stream, "baseline");
      restore_inout(s.inout, s.cand);
      plan(cand_, s.cand, stream, "candidate");
    }
    std::vector<double> tb, tc;
    double total_b = 0, total_c = 0;
    const size_t S = sets_.size();
    // The kernel trace of the timed calls: the harness's stream is the only one allowed.
    const bool trace = cfg_.backend == DeviceType::cuda && kernel_trace_available();
    uint32_t own_stream = 0;
    if (trace) {
      kernel_trace_start();
      sync(cfg_.backend);
      kernel_trace_collect();  // drop what ran before the timing phase
      own_stream = kernel_trace_stream_id(stream);
    }
    for (int i = 0;; ++i) {
      const bool warm = i < cfg_.warmup_calls;
      auto& s = sets_[static_cast<size_t>(i) % S];
      // Interleaved, alternating order, so clock and thermal drift hit both equally.
      for (int k = 0; k < 2; ++k) {
        const bool cand_turn = (k == 0) == (i % 2 == 1);
        OpCase& c = cand_turn ? s.cand : s.base;
        restore_inout(s.inout, c);
        // A no-op must not pass on the previous call's output left in the buffer.
        poison_outputs(def_, c, stream, /*workspace_too=*/false);
        const Implementation& impl = cand_turn ? cand_ : base_;
        const double us = timer_.time_us([&] { call(impl, c, stream, cand_turn ? "candidate" : "baseline"); });
        if (cand_turn) {
          if (!outputs_match(def_, c, s.expected, stream)) {
            if (w.deterministic)
              throw Failure{Verdict::REWARD_HACK,
                            concat("timed call ", i, ": output differs from the checked output for the same inputs")};
          }
        }
        if (warm) continue;
        (cand_turn ? tc : tb).push_back(us);
        (cand_turn ? total_c : total_b) += us / 1000.0;
      }
      const int n = static_cast<int>(tc.size());
      if (n >= cfg_.max_timed_calls) break;
      if (n >= cfg_.min_timed_calls && total_b >= cfg_.min_timed_ms && total_c >= cfg_.min_timed_ms) break;
    }
    if (trace) {
      sync(cfg_.backend);
      for (const auto& k : kernel_trace_collect())
        if (k.stream_id != own_stream)
          throw Failure{Verdict::REWARD_HACK, concat("kernel ", k.name, " ran on stream ", k.stream_id,
                                                      ", not on the stream the call was given (", own_stream,
                                                      "): work the timer would not see")};
    }
    if (cfg_.backend == DeviceType::cuda)
      if (const std::string t = l2_tampering(stream); !t.empty()) throw Failure{Verdict::REWARD_HACK, t};
    w.baseline = summarize(tb);
    w.candidate = summarize(tc);
    w.speedup = w.candidate.median_us > 0 ? w.baseline.median_us / w.candidate.median_us : 0;
    if (ceilings_ && def_.cost && !sets_.empty()) {  // fraction of speed of light (ceilings.h)
      const OpCost cost = def_.cost(sets_.front().host);
      if (w.baseline.median_us > 0) w.sol_baseline = sol_fraction(cost, w.baseline.median_us * 1e-6, *ceilings_);
      if (w.candidate.median_us > 0) w.sol_candidate = sol_fraction(cost, w.candidate.median_us * 1e-6, *ceilings_);
    }
  }

  struct Set {
    OpCase host, base, cand;
    std::vector<Tensor> expected;  // the verified outputs (snapshot_outputs), on the candidate's device
    std::vector<Tensor> inout;     // the in-place arguments' checked inputs, on the device (inout_sources)
  };

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
  FK_CHECK(candidate.run != nullptr, "candidate has no run function");
  auto timer = cfg.backend == DeviceType::cpu ? make_cpu_timer() : make_cuda_timer();
  if (cfg.backend == DeviceType::cuda) l2_guard_arm();

  // The device's measured ceilings (`fk env --measure`), for the fraction of speed of light.
  std::optional<DeviceCeilings> ceilings;
  if (cfg.backend == DeviceType::cuda) ceilings = load_ceilings(0);
  const DeviceCeilings* ceil = ceilings ? &*ceilings : nullptr;

  Verdict verdict = Verdict::PASSED;
  std::string harness_message;
  // One workload; false once the harness itself failed (nothing after it is judged).
  auto judge = [&](const Json& shape, double calls, const std::string& label, bool timed) {
    WorkloadEvaluator ev(task, candidate, cfg, *timer, ceil);
    res.workloads.push_back(ev.run(shape, calls, label, timed));
    verdict = worse(verdict, ev.verdict());
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
