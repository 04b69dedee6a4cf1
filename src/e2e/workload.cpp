#include "e2e/workload.h"

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

}  // namespace

std::vector<std::string> workload_presets() { return {"latency-1", "latency-32", "mixed", "long", "tiny"}; }

WorkloadSpec workload_spec(const std::string& name_or_file) {
  WorkloadSpec w = preset(name_or_file);
  if (!w.name.empty()) return w;
  FK_CHECK(std::filesystem::is_regular_file(name_or_file), "workload '", name_or_file,
           "' is neither a preset (latency-1, latency-32, mixed, long, tiny) nor a JSON file");
  std::ifstream f(name_or_file);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const std::exception& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "workload file ", name_or_file, ": ", e.what());
  }
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
  FK_CHECK(w.num_requests > 0 && w.input_lo > 0 && w.input_hi >= w.input_lo && w.output_lo > 0 &&
               w.output_hi >= w.output_lo && w.teacher_positions > 0,
           "workload file ", name_or_file, ": needs num_requests > 0 and ranges with 0 < lo <= hi");
  return w;
}

nlohmann::json to_json(const WorkloadSpec& w) {
  return {{"name", w.name},           {"num_requests", w.num_requests},
          {"input", {w.input_lo, w.input_hi}}, {"output", {w.output_lo, w.output_hi}},
          {"teacher_forced", w.teacher_forced}, {"teacher_positions", w.teacher_positions},
          {"seed", w.seed}};
}

std::vector<WorkloadRequest> make_requests(const WorkloadSpec& w, int64_t vocab, int64_t max_model_len) {
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
