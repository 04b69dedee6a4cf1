#include "serving/http/metrics.h"

#include <algorithm>
#include <sstream>
#include <utility>

namespace fk::serve {

void Histogram::observe(double v, uint64_t times) {
  if (times == 0) return;
  std::lock_guard lk(mu_);
  const size_t b = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  counts_[b] += times;
  sum_ += v * static_cast<double>(times);
  count_ += times;
}

std::string Histogram::render(const std::string& name, const std::string& help, const std::string& labels) const {
  std::lock_guard lk(mu_);
  std::ostringstream os;
  const std::string own = labels.empty() ? "" : "{" + labels + "}";
  const std::string before_le = labels.empty() ? "{" : "{" + labels + ",";
  os << "# HELP " << name << " " << help << "\n# TYPE " << name << " histogram\n";
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    os << name << "_bucket" << before_le << "le=\"" << bounds_[i] << "\"} " << cum << "\n";
  }
  cum += counts_.back();
  os << name << "_bucket" << before_le << "le=\"+Inf\"} " << cum << "\n"
     << name << "_sum" << own << " " << sum_ << "\n" << name << "_count" << own << " " << count_ << "\n";
  return os.str();
}

namespace {

// A label value in the Prometheus text format: backslash, quote and newline escaped.
std::string label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

ServerMetrics::ServerMetrics()
    : ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}),
      tpot_({0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.25, 0.5}),
      e2e_({0.01, 0.05, 0.1, 0.3, 0.5, 1, 2.5, 5, 10, 15, 20, 30, 40, 50, 60}),
      // vLLM's buckets for the same three (its v1 metrics logger).
      vllm_ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
                  80.0, 160.0, 640.0, 2560.0}),
      vllm_tpot_({0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
                  80.0}),
      vllm_e2e_({0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
                 960.0, 1920.0, 7680.0}) {}

void ServerMetrics::observe_request(double e2e_s, double first_token_s, int64_t tokens) {
  e2e_.observe(e2e_s);
  vllm_e2e_.observe(e2e_s);
  if (first_token_s < 0) return;
  ttft_.observe(first_token_s);
  vllm_ttft_.observe(first_token_s);
  if (tokens > 1) {
    const double per_token = (e2e_s - first_token_s) / static_cast<double>(tokens - 1);
    tpot_.observe(per_token);
    // vLLM observes every gap between two output tokens; the request's mean gap, once per
    // gap, keeps its sum and count the same.
    vllm_tpot_.observe(per_token, static_cast<uint64_t>(tokens - 1));
  }
}

void ServerMetrics::count_http(int status) {
  std::lock_guard lk(mu_);
  (status < 400 ? ok_ : status < 500 ? client_errors_ : server_errors_)++;
}

std::string ServerMetrics::render(const LoopStats& s, const std::string& model_name) const {
  std::ostringstream os;
  auto gauge = [&](const char* name, const char* help, double v, const char* type = "gauge") {
    os << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n" << name << " " << v << "\n";
  };
  gauge("fk_requests_running", "Requests in the engine (scheduled or waiting for KV blocks).",
        static_cast<double>(s.running));
  gauge("fk_requests_queued", "Requests received and not yet handed to the engine.", static_cast<double>(s.queued));
  gauge("fk_kv_cache_usage_ratio", "Fraction of KV-cache pages held by requests.", s.kv_usage);
  gauge("fk_requests_finished_total", "Requests finished.", static_cast<double>(s.requests_finished), "counter");
  gauge("fk_prompt_tokens_total", "Prompt tokens received.", static_cast<double>(s.prompt_tokens), "counter");
  gauge("fk_generation_tokens_total", "Tokens generated.", static_cast<double>(s.generation_tokens), "counter");
  // The engine's step profile: how many steps of each kind, and where the loop's time went.
  const engine::EngineStats& e = s.engine;
  os << "# HELP fk_engine_steps_total Engine steps by kind (mixed: decodes and prefill chunks together).\n"
     << "# TYPE fk_engine_steps_total counter\n"
     << "fk_engine_steps_total{kind=\"decode\"} " << e.decode_steps << "\n"
     << "fk_engine_steps_total{kind=\"mixed\"} " << e.mixed_steps << "\n"
     << "fk_engine_steps_total{kind=\"prefill\"} " << e.prefill_steps << "\n";
  gauge("fk_engine_decode_tokens_total", "Tokens computed as single-token (decode) requests.",
        static_cast<double>(e.decode_tokens), "counter");
  gauge("fk_engine_prefill_tokens_total", "Prompt tokens computed (prefill chunks).", static_cast<double>(e.prefill_tokens),
        "counter");
  gauge("fk_engine_graph_replays_total", "Decode steps run by replaying a captured CUDA graph.",
        static_cast<double>(e.graph_replays), "counter");
  os << "# HELP fk_engine_loop_seconds_total Engine loop time by phase: the scheduler (schedule, update), the "
        "runner's host preparation (prepare), launch to sampled tokens on the host (run), all of an engine step "
        "(step), and the loop's own work between steps (loop).\n# TYPE fk_engine_loop_seconds_total counter\n";
  for (auto [phase, v] : {std::pair{"schedule", e.schedule_s}, {"prepare", e.prepare_s}, {"run", e.run_s},
                          {"update", e.update_s}, {"step", s.step_s}, {"loop", s.loop_work_s}})
    os << "fk_engine_loop_seconds_total{phase=\"" << phase << "\"} " << v << "\n";
  {
    std::lock_guard lk(mu_);
    os << "# HELP fk_http_responses_total HTTP responses by class.\n# TYPE fk_http_responses_total counter\n"
       << "fk_http_responses_total{class=\"2xx\"} " << ok_ << "\nfk_http_responses_total{class=\"4xx\"} "
       << client_errors_ << "\nfk_http_responses_total{class=\"5xx\"} " << server_errors_ << "\n";
  }
  os << ttft_.render("fk_time_to_first_token_seconds", "Time from request to its first token.");
  os << tpot_.render("fk_time_per_output_token_seconds", "Mean time between output tokens of a request.");
  os << e2e_.render("fk_e2e_request_latency_seconds", "Time from request to its last token.");
  auto abort_index = static_cast<size_t>(engine::FinishReason::abort);
  gauge("fk_requests_aborted_total", "Requests aborted (client gone, or shutdown).",
        static_cast<double>(s.finished_by_reason[abort_index]), "counter");

  // The same under vLLM's names and labels.
  const std::string model = "model_name=\"" + label_value(model_name) + "\"";
  auto vllm = [&](const char* name, const char* type, const char* help, double v) {
    os << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n"
       << name << "{" << model << "} " << v << "\n";
  };
  vllm("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.",
       static_cast<double>(s.running));
  vllm("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
       static_cast<double>(s.queued));
  vllm("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", s.kv_usage);
  vllm("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
       static_cast<double>(s.prompt_tokens));
  vllm("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
       static_cast<double>(s.generation_tokens));
  // vLLM counts aborted requests here too, under finished_reason="abort".
  os << "# HELP vllm:request_success_total Count of successfully processed requests.\n"
     << "# TYPE vllm:request_success_total counter\n";
  for (auto reason : {engine::FinishReason::stop, engine::FinishReason::length, engine::FinishReason::abort})
    os << "vllm:request_success_total{" << model << ",finished_reason=\"" << engine::finish_reason_name(reason)
       << "\"} " << s.finished_by_reason[static_cast<size_t>(reason)] << "\n";
  os << vllm_ttft_.render("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", model);
  os << vllm_tpot_.render("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.",
                          model);
  os << vllm_e2e_.render("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", model);
  return os.str();
}

}  // namespace fk::serve
