// The serving benchmark (`fk bench serve`): replays requests against any OpenAI-compatible
// completions server, arriving as a Poisson process (or all at once) and capped at a
// maximum concurrency, streaming every response. Metrics as vLLM's serving benchmark
// defines them: TTFT (request sent -> first token), TPOT ((e2e - TTFT) / (output tokens - 1),
// per request), ITL (gaps between successive token events), E2E latency; throughput in
// requests/s, output tokens/s and total tokens/s over the whole run.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fk::serve {

struct BenchRequest {
  std::vector<int64_t> prompt;  // token ids
  int64_t output_len = 0;       // max_tokens, with ignore_eos
};

struct ServingBenchConfig {
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string model;            // sent as "model" (empty: not sent)
  double request_rate = 0;      // requests/s of the Poisson process; <= 0: all at once
  int64_t max_concurrency = 0;  // requests in flight at most; 0: no cap
  uint64_t seed = 0;            // arrival times
  double timeout_s = 600;       // per request
};

struct RequestOutcome {
  bool ok = false;
  std::string error;
  int64_t prompt_tokens = 0, output_tokens = 0;
  double ttft_s = 0, e2e_s = 0;
  std::vector<double> itl_s;
};

// Random token-id prompts with lengths uniform in [in_lo, in_hi] and outputs in [out_lo, out_hi].
std::vector<BenchRequest> random_requests(int64_t n, int64_t in_lo, int64_t in_hi, int64_t out_lo, int64_t out_hi,
                                          int64_t vocab, uint64_t seed);

// Runs every request; returns one outcome per request (same order) and the wall time.
std::vector<RequestOutcome> run_serving_bench(const ServingBenchConfig& config, const std::vector<BenchRequest>& reqs,
                                              double* duration_s);

// The summary JSON: counts, throughputs, and mean / median / p99 (ms) of TTFT, TPOT, ITL, E2E.
nlohmann::json summarize(const std::vector<RequestOutcome>& outcomes, double duration_s);

}  // namespace fk::serve
