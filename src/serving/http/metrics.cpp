#include "serving/http/metrics.h"

#include <algorithm>
#include <sstream>
#include <utility>

namespace fk::serve {

void Histogram::observe(double v) {
  std::lock_guard lk(mu_);
  const size_t b = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  counts_[b]++;
  sum_ += v;
  count_++;
}

std::string Histogram::render(const std::string& name, const std::string& help) const {
  std::lock_guard lk(mu_);
  std::ostringstream os;
  os << "# HELP " << name << " " << help << "\n# TYPE " << name << " histogram\n";
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    os << name << "_bucket{le=\"" << bounds_[i] << "\"} " << cum << "\n";
  }
  cum += counts_.back();
  os << name << "_bucket{le=\"+Inf\"} " << cum << "\n" << name << "_sum " << sum_ << "\n" << name << "_count " << count_ << "\n";
  return os.str();
}

ServerMetrics::ServerMetrics()
    : ttft({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}),
      tpot({0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.25, 0.5}),
      e2e({0.01, 0.05, 0.1, 0.3, 0.5, 1, 2.5, 5, 10, 15, 20, 30, 40, 50, 60}) {}

void ServerMetrics::count_http(int status) {
  std::lock_guard lk(mu_);
  (status < 400 ? ok_ : status < 500 ? client_errors_ : server_errors_)++;
}

std::string ServerMetrics::render(const LoopStats& s) const {
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
  os << ttft.render("fk_time_to_first_token_seconds", "Time from request to its first token.");
  os << tpot.render("fk_time_per_output_token_seconds", "Mean time between output tokens of a request.");
  os << e2e.render("fk_e2e_request_latency_seconds", "Time from request to its last token.");
  return os.str();
}

}  // namespace fk::serve
