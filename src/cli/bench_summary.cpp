#include "cli/bench_summary.h"

#include <cstdio>

namespace fk::cli {
namespace {

using nlohmann::json;

// One printf-formatted piece (its format carries its own newlines).
template <class... Args>
std::string fmt(const char* format, Args... args) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), format, args...);
  return buf;
}

double num(const json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0; }

// "model on cuda (NVIDIA H200), bf16"
std::string where(const json& j) {
  std::string s = j.value("model", std::string("?")) + " on " + j.value("backend", std::string("?"));
  if (j.contains("device") && j["device"].contains("name")) s += " (" + j["device"]["name"].get<std::string>() + ")";
  if (j.contains("dtype")) s += ", " + j["dtype"].get<std::string>();
  if (j.contains("variants") && j["variants"].is_string() && !j["variants"].get<std::string>().empty())
    s += ", variants " + j["variants"].get<std::string>();
  return s + "\n";
}

}  // namespace

std::string bench_summary(const json& j) {
  const std::string kind = j.value("bench", std::string());
  std::string s;
  if (kind == "latency") {
    s += where(j);
    s += fmt("batch %.0f, %.0f tokens in, %.0f out, %.0f runs (median)\n", num(j, "batch_size"), num(j, "input_len"),
             num(j, "output_len"), num(j, "iters"));
    s += fmt("  latency      %10.4f s\n", num(j, "median_latency_s"));
    s += fmt("  prefill      %10.3f ms  %12.0f tokens/s\n", 1e3 * num(j, "median_prefill_s"),
             num(j, "prefill_tokens_per_s"));
    if (j.contains("median_decode_step_ms"))
      s += fmt("  decode step  %10.3f ms  %12.0f tokens/s\n", num(j, "median_decode_step_ms"),
               num(j, "decode_tokens_per_s"));
  } else if (kind == "throughput") {
    s += where(j);
    s += fmt("%.0f requests, %.0f prompt + %.0f output tokens in %.3f s\n", num(j, "num_prompts"),
             num(j, "prompt_tokens"), num(j, "output_tokens"), num(j, "elapsed_s"));
    s += fmt("  throughput   %.2f requests/s, %.0f output tokens/s, %.0f total tokens/s\n", num(j, "requests_per_s"),
             num(j, "output_tokens_per_s"), num(j, "total_tokens_per_s"));
    if (num(j, "preemptions") > 0) s += fmt("  preemptions  %.0f\n", num(j, "preemptions"));
  } else if (kind == "serve") {
    s += "server " + j.value("server", std::string("?")) + "\n";
    s += fmt("%.0f completed, %.0f failed in %.3f s\n", num(j, "completed"), num(j, "failed"), num(j, "duration_s"));
    s += fmt("  throughput   %.2f requests/s, %.0f output tokens/s, %.0f total tokens/s\n",
             num(j, "request_throughput"), num(j, "output_throughput"), num(j, "total_token_throughput"));
    s += "               mean ms   median ms      p99 ms\n";
    for (const char* m : {"ttft", "tpot", "itl", "e2el"}) {
      const std::string k(m);
      s += fmt("  %-6s %12.2f %11.2f %11.2f\n", m, num(j, ("mean_" + k + "_ms").c_str()),
               num(j, ("median_" + k + "_ms").c_str()), num(j, ("p99_" + k + "_ms").c_str()));
    }
  } else {
    s = j.dump(2) + "\n";
  }
  return s;
}

}  // namespace fk::cli
