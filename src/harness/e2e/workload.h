// End-to-end workloads: the requests an engine run serves, as token-id prompts with output
// lengths, drawn with a fixed seed from stated length distributions (so a baseline run and
// a candidate run see the same requests). Presets follow the e2e issue: latency (batch 1
// and 32, 128 outputs), mixed serving, long context; or a JSON file with the same fields,
// which may instead list its requests: inline ("requests") or in a dataset file
// ("dataset", a path relative to the workload file), each {"prompt": [token ids],
// "output_len": n} (for instance prompts tokenised from real conversations).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fk::e2e {

struct WorkloadRequest {
  std::vector<int64_t> prompt;
  int64_t max_tokens = 0;
};

struct WorkloadSpec {
  std::string name;
  std::vector<WorkloadRequest> requests;  // given requests (dataset); empty: drawn from the ranges
  std::string dataset;                    // where they came from (for reports)
  int64_t num_requests = 1;
  int64_t input_lo = 128, input_hi = 128;
  int64_t output_lo = 128, output_hi = 128;
  int64_t teacher_forced = 2;  // requests re-run teacher-forced for the logit comparison
  int64_t teacher_positions = 16;  // positions of each whose logits are compared
  uint64_t seed = 0;
};

// "latency-1", "latency-32", "mixed", "long", "tiny" (CPU tests), or a path to a JSON file
// holding the WorkloadSpec fields. Throws naming the unknown preset or bad field.
WorkloadSpec workload_spec(const std::string& name_or_file);
std::vector<std::string> workload_presets();
nlohmann::json to_json(const WorkloadSpec& w);
std::vector<WorkloadRequest> make_requests(const WorkloadSpec& w, int64_t vocab, int64_t max_model_len);

}  // namespace fk::e2e
