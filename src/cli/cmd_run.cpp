// `fk run --model M`: one default workload of a registered model on generated inputs, with
// a checksum of its output, to see that a model runs and that its output is what it was.
//   Generate: a greedy generation (ignore-eos) from a random prompt of a fixed seed; the
//             checksum is XXH64 of the output token ids (little-endian int64).
// Patterns without a runner yet give a named error.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "cli/command.h"
#include "cli/engine_options.h"
#include "cli/model_lookup.h"
#include "core/safetensors/safetensors.h"
#include "fk/status.h"
#include "serving/generate/engine.h"

namespace fk::cli {
namespace {

using nlohmann::json;

struct RunCli {
  EngineOptions engine;
  int64_t input_len = 16;
  int64_t output_len = 16;
  std::string json_out;
};

// XXH64 of the ids as little-endian int64 (`xxhsum -H64` over the same bytes agrees).
std::string token_checksum(const std::vector<int64_t>& ids) {
  std::vector<uint8_t> bytes;
  for (int64_t id : ids)
    for (int b = 0; b < 8; ++b) bytes.push_back(static_cast<uint8_t>(static_cast<uint64_t>(id) >> (8 * b)));
  return safetensors::hash_hex(safetensors::content_hash64(bytes.data(), bytes.size()));
}

json run_generate(const RunCli& o, const engine::EngineConfig& config) {
  engine::Engine e(config);
  const int64_t vocab = e.spec().config.vocab_size;
  FK_CHECK(o.input_len + o.output_len <= e.max_model_len(), "run: --input-len + --output-len (",
           o.input_len + o.output_len, ") exceeds the engine's max_model_len ", e.max_model_len());
  std::mt19937_64 rng(o.engine.seed + 1);
  std::uniform_int_distribution<int64_t> token(0, vocab - 1);
  std::vector<int64_t> prompt(static_cast<size_t>(o.input_len));
  for (auto& t : prompt) t = token(rng);
  engine::SamplingParams p;
  p.temperature = 0;
  p.max_tokens = o.output_len;
  p.ignore_eos = true;
  const double t0 = e.now_s();
  const auto results = e.generate({prompt}, p);
  const double seconds = e.now_s() - t0;
  const std::vector<int64_t>& out = results.at(0).output_tokens;
  json j;
  j["tokens_in"] = o.input_len;
  j["tokens_out"] = static_cast<int64_t>(out.size());
  j["seconds"] = seconds;
  j["output_tokens_per_s"] = seconds > 0 ? static_cast<double>(out.size()) / seconds : 0.0;
  j["prompt"] = prompt;
  j["output"] = out;
  j["checksum"] = token_checksum(out);
  j["checksum_of"] = "XXH64 of the output token ids as little-endian int64";
  return j;
}

void run(const RunCli& o) {
  FK_CHECK(o.input_len > 0 && o.output_len > 0, "run: --input-len and --output-len must be positive");
  const engine::EngineConfig config = o.engine.to_config();
  const std::string device = config.backend == DeviceType::cuda ? "cuda" : "cpu";
  const models::ModelSource src = lookup_model(o.engine.model, models::RunPattern::generate, device, "fk run");
  json j = run_generate(o, config);
  j["model"] = o.engine.model;
  j["architecture"] = src.registration->architecture;
  j["pattern"] = models::run_pattern_name(src.registration->pattern);
  j["preset"] = src.preset ? json(src.preset->name) : json(nullptr);
  j["weights"] = src.preset || o.engine.dummy_weights ? "dummy" : "checkpoint";
  j["device"] = device;
  j["dtype"] = o.engine.dtype;
  j["seed"] = o.engine.seed;
  j["command"] = invoked_command();
  std::printf("model %s (architecture %s, %s) on %s, %s, %s weights\n", o.engine.model.c_str(),
              src.registration->architecture.c_str(), j["pattern"].get<std::string>().c_str(), device.c_str(),
              o.engine.dtype.c_str(), j["weights"].get<std::string>().c_str());
  std::printf("tokens in %lld, out %lld, %.3f s (%.1f tokens/s)\n", static_cast<long long>(j["tokens_in"].get<int64_t>()),
              static_cast<long long>(j["tokens_out"].get<int64_t>()), j["seconds"].get<double>(),
              j["output_tokens_per_s"].get<double>());
  std::printf("checksum %s\n", j["checksum"].get<std::string>().c_str());
  if (o.json_out.empty()) return;
  std::ofstream f(o.json_out);
  FK_CHECK(f.good(), "run: cannot write ", o.json_out);
  f << j.dump(2) << "\n";
}

void setup(CLI::App& app) {
  static RunCli o;
  auto* cmd = app.add_subcommand("run", "One default workload of a registered model on generated inputs (Generate: a "
                                        "greedy generation from a random prompt), with a checksum of its output");
  o.engine.add_to(cmd);
  cmd->get_option("--model")->description(kModelHelp);
  cmd->add_option("--input-len", o.input_len, "Prompt tokens (Generate)")->capture_default_str();
  cmd->add_option("--output-len", o.output_len, "Generated tokens (Generate)")->capture_default_str();
  cmd->add_option("--json-out", o.json_out, "Also write the summary, outputs and checksum as JSON to this file");
  cmd->callback([] { run(o); });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
