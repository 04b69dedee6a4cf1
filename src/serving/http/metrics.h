// Prometheus text metrics of the server: request and token counters from the engine loop,
// and latency histograms (time to first token, time per output token, end to end).
#pragma once
#include <array>
#include <mutex>
#include <string>
#include <vector>

#include "serving/http/engine_loop.h"

namespace fk::serve {

// A cumulative histogram with fixed upper bounds (seconds), as Prometheus expects.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double v);
  std::string render(const std::string& name, const std::string& help) const;

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
  Histogram ttft, tpot, e2e;
  void count_http(int status);
  std::string render(const LoopStats& loop) const;

 private:
  mutable std::mutex mu_;
  uint64_t ok_ = 0, client_errors_ = 0, server_errors_ = 0;
};

}  // namespace fk::serve
