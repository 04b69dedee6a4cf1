#include "harness/e2e/e2e_compare.h"

#include <algorithm>
#include <numeric>

#include "fk/status.h"

namespace fk::e2e {

using nlohmann::json;

namespace {

double mean_request_latency(const json& run) {
  const auto lat = run.at("e2e_s").get<std::vector<double>>();
  FK_CHECK(!lat.empty(), "e2e: a run reported no request latencies");
  return std::accumulate(lat.begin(), lat.end(), 0.0) / static_cast<double>(lat.size());
}

}  // namespace

// A Batch run (e2e_batch_run.h): the same batch on both sides, so speed is the ratio of
// the runs' median times, and correctness the candidate's outputs against the baseline's.
json compare_batch_runs(const json& base, const json& cand) {
  json out;
  const double be = base.at("elapsed_s").get<double>(), ce = cand.at("elapsed_s").get<double>();
  out["speedup"] = {{"throughput", be / ce}, {"latency", be / ce}, {"elapsed", be / ce}};
  out["baseline"] = {{"elapsed_s", be}, {"tokens_per_s", base["tokens_per_s"]}};
  out["candidate"] = {{"elapsed_s", ce}, {"tokens_per_s", cand["tokens_per_s"]}};
  const json tf = cand.value("teacher_forced", json::object());
  out["teacher_forced"] = tf;
  std::string verdict = "PASSED", reason;
  if (tf.empty() || tf.value("positions", 0) == 0) {
    verdict = "INCORRECT";
    reason = "no outputs were compared";
  } else if (tf["max_rel_err"].get<double>() > kMaxRelHiddenErr) {
    verdict = "INCORRECT";
    reason = concat("hidden states differ by up to ", tf["max_rel_err"].get<double>(), " of a row's range (bound ",
                    kMaxRelHiddenErr, ")");
  } else if (tf["min_cosine"].get<double>() < kMinDenseCosine) {
    verdict = "INCORRECT";
    reason = concat("a dense vector's cosine to the baseline's is ", tf["min_cosine"].get<double>(), " (bound ",
                    kMinDenseCosine, ")");
  } else if (tf.value("sparse_max_rel_err", 0.0) > kMaxRelHiddenErr) {
    verdict = "INCORRECT";
    reason = concat("the sparse weights differ by up to ", tf["sparse_max_rel_err"].get<double>(),
                    " of the largest (bound ", kMaxRelHiddenErr, ")");
  } else if (tf.value("colbert_min_cosine", 1.0) < kMinDenseCosine) {
    verdict = "INCORRECT";
    reason = concat("a ColBERT vector's cosine to the baseline's is ", tf["colbert_min_cosine"].get<double>(),
                    " (bound ", kMinDenseCosine, ")");
  }
  out["verdict"] = verdict;
  if (!reason.empty()) out["reason"] = reason;
  return out;
}

json compare_runs(const json& base, const json& cand) {
  if (base.value("pattern", "") == "batch") return compare_batch_runs(base, cand);
  const auto& bo = base.at("outputs");
  const auto& co = cand.at("outputs");
  FK_CHECK(bo.size() == co.size(), "e2e: the runs served different request counts (", bo.size(), " vs ", co.size(), ")");
  int64_t matched = 0, diverged = 0, first_min = -1;
  double first_sum = 0;
  std::vector<int64_t> first;
  for (size_t i = 0; i < bo.size(); ++i) {
    const auto b = bo[i].get<std::vector<int64_t>>(), c = co[i].get<std::vector<int64_t>>();
    int64_t pos = -1;
    for (size_t t = 0; t < std::max(b.size(), c.size()); ++t)
      if (t >= b.size() || t >= c.size() || b[t] != c[t]) {
        pos = static_cast<int64_t>(t);
        break;
      }
    first.push_back(pos);
    if (pos < 0) {
      ++matched;
      continue;
    }
    ++diverged;
    first_sum += static_cast<double>(pos);
    first_min = first_min < 0 ? pos : std::min(first_min, pos);
  }
  json out;
  out["token_agreement"] = {{"requests", static_cast<int64_t>(bo.size())},
                            {"exact_match", matched},
                            {"exact_match_rate", static_cast<double>(matched) / static_cast<double>(bo.size())},
                            {"first_divergence_min", first_min},
                            {"first_divergence_mean", diverged ? first_sum / static_cast<double>(diverged) : -1.0},
                            {"first_divergence", first}};
  const double bt = base.at("output_tokens_per_s").get<double>(), ct = cand.at("output_tokens_per_s").get<double>();
  // latency: the mean time from a request's arrival to its last token, baseline over candidate.
  out["speedup"] = {{"throughput", ct / bt},
                    {"latency", mean_request_latency(base) / mean_request_latency(cand)},
                    {"elapsed", base.at("elapsed_s").get<double>() / cand.at("elapsed_s").get<double>()}};
  out["baseline"] = {{"elapsed_s", base["elapsed_s"]}, {"output_tokens_per_s", bt}};
  out["candidate"] = {{"elapsed_s", cand["elapsed_s"]}, {"output_tokens_per_s", ct}};
  const json tf = cand.value("teacher_forced", json::object());
  out["teacher_forced"] = tf;
  std::string verdict = "PASSED", reason;
  if (tf.empty() || tf.value("positions", 0) == 0) {
    verdict = "INCORRECT";
    reason = "no teacher-forced positions were compared";
  } else if (tf["max_rel_err"].get<double>() > kMaxRelLogitErr) {
    verdict = "INCORRECT";
    reason = concat("teacher-forced logits differ by up to ", tf["max_rel_err"].get<double>(),
                    " of their range (bound ", kMaxRelLogitErr, ")");
  } else if (tf["mean_kl"].get<double>() > kMaxMeanKl) {
    verdict = "INCORRECT";
    reason = concat("mean KL divergence ", tf["mean_kl"].get<double>(), " nats (bound ", kMaxMeanKl, ")");
  } else if (const json df = cand.value("decode_forced", json::object());
             !df.empty() && (df.value("max_rel_err", 0.0) > kMaxRelLogitErr || df.value("mean_kl", 0.0) > kMaxMeanKl)) {
    verdict = "INCORRECT";
    reason = concat("decode steps' teacher-forced logits differ by up to ", df["max_rel_err"].get<double>(),
                    " of their range (bound ", kMaxRelLogitErr, "), mean KL ", df["mean_kl"].get<double>(),
                    " nats (bound ", kMaxMeanKl, ")");
  } else if (const json dv = cand.value("divergence", json::object());
             !dv.empty() && dv.value("max_margin", 0.0) > kMaxDivergenceMargin) {
    const json& w = dv["worst"];
    verdict = "INCORRECT";
    reason = concat("request ", w["request"].get<int64_t>(), " chose token ", w["candidate_token"].get<int64_t>(),
                    " at output ", w["output"].get<int64_t>(), " where, teacher forced, the baseline's token ",
                    w["baseline_token"].get<int64_t>(), " leads it by ", w["margin"].get<double>(),
                    " of the logits' range (bound ", kMaxDivergenceMargin, "): not a near-tie");
  }
  if (cand.contains("decode_forced")) out["decode_forced"] = cand["decode_forced"];
  if (cand.contains("divergence")) out["divergence"] = cand["divergence"];
  out["verdict"] = verdict;
  if (!reason.empty()) out["reason"] = reason;
  return out;
}

}  // namespace fk::e2e
