#include "harness/e2e/repeat_runs.h"

#include <algorithm>

#include "fk/status.h"
#include "harness/time/stats.h"

namespace fk::e2e {

nlohmann::json fold_runs(const std::vector<nlohmann::json>& runs) {
  FK_CHECK(!runs.empty(), "e2e: no runs to fold");
  nlohmann::json out = runs.front();
  std::vector<double> elapsed;
  bool reproducible = true;
  for (const auto& r : runs) {
    elapsed.push_back(r.at("elapsed_s").get<double>());
    reproducible = reproducible && r.at("outputs") == runs.front().at("outputs");
  }
  const double e = bench::median(elapsed);
  out["elapsed_s"] = e;
  out["elapsed_s_runs"] = elapsed;
  out["reproducible"] = reproducible;
  out["runs"] = static_cast<int64_t>(runs.size());
  const std::string pattern = out.value("pattern", "");
  if (pattern == "denoise" || pattern == "detect" || pattern == "classify") {  // images
    out["images_per_s"] = static_cast<double>(out.at("images").get<int64_t>()) / e;
    return out;
  }
  if (pattern == "recommend") {  // e2e_recommend_run.h: samples
    out["samples_per_s"] = static_cast<double>(out.at("samples").get<int64_t>()) / e;
    return out;
  }
  if (pattern == "batch") {  // e2e_batch_run.h: one batch, no requests
    out["tokens_per_s"] = static_cast<double>(out.at("tokens").get<int64_t>()) / e;
    out["sequences_per_s"] = static_cast<double>(out.at("sequences").get<int64_t>()) / e;
    return out;
  }
  out["output_tokens_per_s"] = static_cast<double>(out.at("output_tokens").get<int64_t>()) / e;
  // Per request: the median over runs of its end-to-end latency.
  const size_t requests = out.at("e2e_s").size();
  std::vector<double> per_request(requests);
  for (size_t i = 0; i < requests; ++i) {
    std::vector<double> v;
    for (const auto& r : runs) v.push_back(r.at("e2e_s").at(i).get<double>());
    per_request[i] = bench::median(v);
  }
  out["e2e_s"] = per_request;
  out["reproducible"] = reproducible;
  out["runs"] = static_cast<int64_t>(runs.size());
  return out;
}

}  // namespace fk::e2e
