// Prometheus text metrics of the server: request and token counters from the engine loop,
// and latency histograms (time to first token, time per output token, end to end). Each
// is there twice: under fk's own names, and under vLLM's (vllm:..., labelled with
// model_name, vLLM's histogram buckets) so dashboards and autoscalers made for vLLM read
// fk serve unchanged.
#pragma once
#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "serving/http/engine_loop.h"

namespace fk::serve {

// A cumulative histogram with fixed upper bounds (seconds), as Prometheus expects.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double v, uint64_t times = 1);  // `times` observations of v
  // `labels`: extra labels of every sample, e.g. model_name="m" (already escaped).
  std::string render(const std::string& name, const std::string& help, const std::string& labels = {}) const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative); the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  // One finished request: its latency, its first token's (< 0: it made none), and how many
  // tokens it made.
  void observe_request(double e2e_s, double first_token_s, int64_t tokens);
  void count_http(int status);
  std::string render(const LoopStats& loop, const std::string& model_name) const;

 private:
  Histogram ttft_, tpot_, e2e_;
  Histogram vllm_ttft_, vllm_tpot_, vllm_e2e_;  // vLLM's buckets
  mutable std::mutex mu_;
  uint64_t ok_ = 0, client_errors_ = 0, server_errors_ = 0;
};

}  // namespace fk::serve
