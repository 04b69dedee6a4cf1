#include "serving/bench/serving_bench.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <random>
#include <semaphore>
#include <thread>

#include "fk/status.h"

namespace fk::serve {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One streamed completion, timed from the moment it is sent.
RequestOutcome send_one(const ServingBenchConfig& c, const BenchRequest& r) {
  RequestOutcome o;
  o.prompt_tokens = static_cast<int64_t>(r.prompt.size());
  json body = {{"prompt", r.prompt}, {"max_tokens", r.output_len}, {"ignore_eos", true}, {"stream", true},
               {"temperature", 0}};
  if (!c.model.empty()) body["model"] = c.model;
  httplib::Client cli(c.host, c.port);
  const auto secs = static_cast<time_t>(c.timeout_s);
  cli.set_read_timeout(secs, 0);
  cli.set_write_timeout(secs, 0);
  std::string buffer;
  double last = 0;
  const Clock::time_point t0 = Clock::now();
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    buffer.append(data, n);
    size_t end;
    while ((end = buffer.find("\n\n")) != std::string::npos) {
      const std::string event = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      if (event.rfind("data: ", 0) != 0 || event == "data: [DONE]") continue;
      const json chunk = json::parse(event.substr(6), nullptr, false);
      if (chunk.is_discarded() || !chunk.contains("choices") || chunk["choices"].empty()) continue;
      const auto& ids = chunk["choices"][0]["token_ids"];
      if (!ids.is_array() || ids.empty()) continue;
      const double now = since(t0);
      if (o.output_tokens == 0) o.ttft_s = now;
      else o.itl_s.push_back(now - last);
      last = now;
      o.output_tokens += static_cast<int64_t>(ids.size());
    }
    return true;
  };
  const auto res = cli.send(req);
  o.e2e_s = since(t0);
  if (!res) {
    o.error = concat("HTTP error ", httplib::to_string(res.error()));
  } else if (res->status != 200) {
    o.error = concat("HTTP ", res->status, ": ", buffer.substr(0, 300));
  } else if (o.output_tokens != r.output_len) {
    o.error = concat("got ", o.output_tokens, " tokens, asked for ", r.output_len);
  } else {
    o.ok = true;
  }
  return o;
}

struct Stats {
  double mean = 0, median = 0, p99 = 0;
};

Stats stats_of(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  auto pct = [&](double p) {  // linear interpolation, as numpy.percentile
    const double pos = p / 100.0 * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(pos);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
  };
  s.median = pct(50);
  s.p99 = pct(99);
  return s;
}

}  // namespace

std::vector<BenchRequest> random_requests(int64_t n, int64_t in_lo, int64_t in_hi, int64_t out_lo, int64_t out_hi,
                                          int64_t vocab, uint64_t seed) {
  FK_CHECK(n > 0 && in_lo > 0 && in_hi >= in_lo && out_lo > 0 && out_hi >= out_lo && vocab > 0,
           "serving bench: request count and length ranges must be positive (LO <= HI)");
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> in(in_lo, in_hi), out(out_lo, out_hi), tok(0, vocab - 1);
  std::vector<BenchRequest> reqs(static_cast<size_t>(n));
  for (BenchRequest& r : reqs) {
    r.prompt.resize(static_cast<size_t>(in(rng)));
    for (int64_t& t : r.prompt) t = tok(rng);
    r.output_len = out(rng);
  }
  return reqs;
}

std::vector<RequestOutcome> run_serving_bench(const ServingBenchConfig& c, const std::vector<BenchRequest>& reqs,
                                              double* duration_s) {
  std::vector<RequestOutcome> out(reqs.size());
  const int64_t cap = c.max_concurrency > 0 ? c.max_concurrency : static_cast<int64_t>(reqs.size());
  std::counting_semaphore<> slots(static_cast<std::ptrdiff_t>(std::max<int64_t>(cap, 1)));
  std::mt19937_64 rng(c.seed);
  std::exponential_distribution<double> gap(c.request_rate > 0 ? c.request_rate : 1.0);
  std::vector<std::thread> threads;
  threads.reserve(reqs.size());
  const Clock::time_point t0 = Clock::now();
  double next_arrival = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (c.request_rate > 0) {
      const double wait = next_arrival - since(t0);
      if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
      next_arrival += gap(rng);
    }
    slots.acquire();
    threads.emplace_back([&, i] {
      out[i] = send_one(c, reqs[i]);
      slots.release();
    });
  }
  for (std::thread& t : threads) t.join();
  *duration_s = since(t0);
  return out;
}

json summarize(const std::vector<RequestOutcome>& outcomes, double duration_s) {
  std::vector<double> ttft, tpot, itl, e2e;
  int64_t completed = 0, in_tokens = 0, out_tokens = 0;
  std::vector<std::string> errors;
  for (const RequestOutcome& o : outcomes) {
    if (!o.ok) {
      if (errors.size() < 5) errors.push_back(o.error);
      continue;
    }
    ++completed;
    in_tokens += o.prompt_tokens;
    out_tokens += o.output_tokens;
    ttft.push_back(o.ttft_s);
    e2e.push_back(o.e2e_s);
    if (o.output_tokens > 1) tpot.push_back((o.e2e_s - o.ttft_s) / static_cast<double>(o.output_tokens - 1));
    itl.insert(itl.end(), o.itl_s.begin(), o.itl_s.end());
  }
  json j = {{"duration_s", duration_s},
            {"completed", completed},
            {"failed", static_cast<int64_t>(outcomes.size()) - completed},
            {"total_input_tokens", in_tokens},
            {"total_output_tokens", out_tokens},
            {"request_throughput", static_cast<double>(completed) / duration_s},
            {"output_throughput", static_cast<double>(out_tokens) / duration_s},
            {"total_token_throughput", static_cast<double>(in_tokens + out_tokens) / duration_s}};
  for (const auto& [name, v] : {std::pair{"ttft", &ttft}, std::pair{"tpot", &tpot}, std::pair{"itl", &itl},
                                std::pair{"e2el", &e2e}}) {
    const Stats s = stats_of(*v);
    j[std::string("mean_") + name + "_ms"] = 1e3 * s.mean;
    j[std::string("median_") + name + "_ms"] = 1e3 * s.median;
    j[std::string("p99_") + name + "_ms"] = 1e3 * s.p99;
  }
  if (!errors.empty()) j["errors"] = errors;
  return j;
}

}  // namespace fk::serve
