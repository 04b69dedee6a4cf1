// Hand-made `fk e2e eval` reports and a temporary database for the store, roll-up and HTML
// tests: the figures are chosen so geometric means come out exact.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fk::e2e::test {

// A report as `fk e2e eval` prints it; a verdict other than PASSED/INCORRECT has no
// comparison (the candidate run never finished).
inline nlohmann::json report(const std::string& model, const std::string& category, const std::string& verdict,
                             double throughput, double latency, const std::vector<std::string>& ops = {"rms_norm"},
                             const std::string& workload = "tiny") {
  nlohmann::json cands = nlohmann::json::array();
  for (const auto& op : ops) cands.push_back({{"op", op}, {"source", op + ".cu"}, {"level", "L1"}, {"ok", true}});
  nlohmann::json r = {{"model", model},     {"category", category}, {"workload", workload},
                      {"backend", "cpu"},   {"candidates", cands},  {"verdict", verdict}};
  if (verdict == "PASSED" || verdict == "INCORRECT")
    r["comparison"] = {
        {"speedup", {{"throughput", throughput}, {"latency", latency}, {"elapsed", throughput}}},
        {"token_agreement",
         {{"requests", 4}, {"exact_match", 3}, {"exact_match_rate", 0.75}, {"first_divergence_min", 7}}},
        {"teacher_forced",
         {{"positions", 16}, {"max_rel_err", 0.0125}, {"mean_abs_err", 0.001}, {"mean_kl", 2.5e-4}, {"max_kl", 1e-3}}},
        {"verdict", verdict}};
  else
    r["reason"] = "worker exited with code 1: boom";
  return r;
}

// A database file of this process, removed when the test ends.
struct TempDb {
  std::filesystem::path path;
  explicit TempDb(const std::string& name)
      : path(std::filesystem::temp_directory_path() / (name + "-" + std::to_string(getpid()) + ".db")) {
    std::filesystem::remove(path);
  }
  ~TempDb() { std::filesystem::remove(path); }
};

}  // namespace fk::e2e::test
