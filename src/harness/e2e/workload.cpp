#include "harness/e2e/workload.h"

#include <filesystem>
#include <fstream>
#include <random>

#include "fk/status.h"

namespace fk::e2e {

namespace {

WorkloadSpec preset(const std::string& name) {
  WorkloadSpec w;
  w.name = name;
  if (name == "latency-1") return w;  // 1 request, 128 in, 128 out
  if (name == "latency-32") {
    w.num_requests = 32;
    return w;
  }
  if (name == "mixed") {
    w.num_requests = 200;
    w.input_lo = 32, w.input_hi = 2048;
    w.output_lo = 16, w.output_hi = 512;
    w.teacher_forced = 4;
    return w;
  }
  if (name == "long") {
    w.num_requests = 4;
    w.input_lo = 8192, w.input_hi = 32000;
    w.output_lo = w.output_hi = 64;
    return w;
  }
  if (name == "tiny") {  // CPU tests: a dozen short requests of mixed lengths
    w.num_requests = 12;
    w.input_lo = 3, w.input_hi = 40;
    w.output_lo = 4, w.output_hi = 16;
    w.teacher_forced = 3;
    w.teacher_positions = 8;
    return w;
  }
  w.name.clear();
  return w;
}

nlohmann::json parse_json_file(const std::filesystem::path& p, const char* what) {
  std::ifstream f(p);
  try {
    return nlohmann::json::parse(f);
  } catch (const std::exception& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, what, " ", p.string(), ": ", e.what());
  }
}

// [{"prompt": [ids], "output_len": n}, ...] -> requests; `where` names the source in errors.
std::vector<WorkloadRequest> requests_of(const nlohmann::json& list, const std::string& where) {
  FK_CHECK(list.is_array() && !list.empty(), where, ": the requests must be a non-empty array");
  std::vector<WorkloadRequest> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& r = list[i];
    FK_CHECK(r.is_object() && r.contains("prompt") && r["prompt"].is_array() && !r["prompt"].empty(), where,
             ": request ", i, " needs a non-empty 'prompt' array of token ids");
    FK_CHECK(r.contains("output_len") && r["output_len"].is_number_integer() && r["output_len"].get<int64_t>() > 0,
             where, ": request ", i, " needs a positive integer 'output_len'");
    WorkloadRequest q;
    for (const auto& t : r["prompt"]) {
      FK_CHECK(t.is_number_integer() && t.get<int64_t>() >= 0, where, ": request ", i,
               "'s prompt holds something other than a token id: ", t.dump());
      q.prompt.push_back(t.get<int64_t>());
    }
    q.max_tokens = r["output_len"].get<int64_t>();
    out.push_back(std::move(q));
  }
  return out;
}

}  // namespace

std::vector<std::string> workload_presets() { return {"latency-1", "latency-32", "mixed", "long", "tiny"}; }

WorkloadSpec workload_spec(const std::string& name_or_file) {
  WorkloadSpec w = preset(name_or_file);
  if (!w.name.empty()) return w;
  FK_CHECK(std::filesystem::is_regular_file(name_or_file), "workload '", name_or_file,
           "' is neither a preset (latency-1, latency-32, mixed, long, tiny) nor a JSON file");
  const nlohmann::json j = parse_json_file(name_or_file, "workload file");
  w.name = j.value("name", std::filesystem::path(name_or_file).stem().string());
  auto num = [&](const char* key, int64_t& v) {
    if (!j.contains(key)) return;
    FK_CHECK(j[key].is_number_integer() && j[key].get<int64_t>() >= 0, "workload file ", name_or_file, ": '", key,
             "' must be a non-negative integer");
    v = j[key].get<int64_t>();
  };
  num("num_requests", w.num_requests);
  num("input_lo", w.input_lo);
  num("input_hi", w.input_hi);
  num("output_lo", w.output_lo);
  num("output_hi", w.output_hi);
  num("teacher_forced", w.teacher_forced);
  num("teacher_positions", w.teacher_positions);
  if (j.contains("seed")) w.seed = j["seed"].get<uint64_t>();
  if (j.contains("requests") || j.contains("dataset")) {
    FK_CHECK(!(j.contains("requests") && j.contains("dataset")), "workload file ", name_or_file,
             ": give 'requests' or 'dataset', not both");
    nlohmann::json list = j.contains("requests") ? j["requests"] : nlohmann::json();
    if (j.contains("dataset")) {
      FK_CHECK(j["dataset"].is_string(), "workload file ", name_or_file, ": 'dataset' must be a path");
      const std::filesystem::path d = std::filesystem::path(name_or_file).parent_path() / j["dataset"].get<std::string>();
      FK_CHECK(std::filesystem::is_regular_file(d), "workload file ", name_or_file, ": no dataset file ", d.string());
      w.dataset = d.string();
      list = parse_json_file(d, "dataset");
    }
    w.requests = requests_of(list, w.dataset.empty() ? name_or_file : w.dataset);
    w.num_requests = static_cast<int64_t>(w.requests.size());
  }
  FK_CHECK(w.num_requests > 0 && w.input_lo > 0 && w.input_hi >= w.input_lo && w.output_lo > 0 &&
               w.output_hi >= w.output_lo && w.teacher_positions > 0,
           "workload file ", name_or_file, ": needs num_requests > 0 and ranges with 0 < lo <= hi");
  return w;
}

nlohmann::json to_json(const WorkloadSpec& w) {
  return {{"name", w.name},           {"num_requests", w.num_requests},
          {"input", {w.input_lo, w.input_hi}}, {"output", {w.output_lo, w.output_hi}},
          {"teacher_forced", w.teacher_forced}, {"teacher_positions", w.teacher_positions},
          {"seed", w.seed}, {"dataset", w.dataset}, {"given_requests", static_cast<int64_t>(w.requests.size())}};
}

std::vector<WorkloadRequest> make_requests(const WorkloadSpec& w, int64_t vocab, int64_t max_model_len) {
  if (!w.requests.empty()) {
    std::vector<WorkloadRequest> reqs = w.requests;
    for (size_t i = 0; i < reqs.size(); ++i) {
      WorkloadRequest& r = reqs[i];
      for (const int64_t t : r.prompt)
        FK_CHECK(t < vocab, "workload ", w.name, ": request ", i, " has token id ", t, ", past the model's vocabulary (",
                 vocab, ")");
      FK_CHECK(static_cast<int64_t>(r.prompt.size()) < max_model_len, "workload ", w.name, ": request ", i, "'s prompt (",
               r.prompt.size(), " tokens) does not fit the model's context (", max_model_len, ")");
      r.max_tokens = std::min(r.max_tokens, max_model_len - static_cast<int64_t>(r.prompt.size()));
    }
    return reqs;
  }
  std::mt19937_64 rng(w.seed * 0x9E3779B97F4A7C15ull + 1);
  std::uniform_int_distribution<int64_t> in(w.input_lo, w.input_hi), out(w.output_lo, w.output_hi),
      tok(0, vocab - 1);
  std::vector<WorkloadRequest> reqs(static_cast<size_t>(w.num_requests));
  for (WorkloadRequest& r : reqs) {
    const int64_t n = std::min(in(rng), max_model_len - 1);
    r.prompt.resize(static_cast<size_t>(n));
    for (int64_t& t : r.prompt) t = tok(rng);
    r.max_tokens = std::min(out(rng), max_model_len - n);
  }
  return reqs;
}

}  // namespace fk::e2e
