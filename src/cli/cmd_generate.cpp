// `fk generate`: prompt token ids in, generated token ids out (text once a tokenizer exists).
// Models that read images (Qwen3-VL) take --image files: each is decoded, run through the
// model's image processor, and placed before the prompt's ids as the chat template places
// it: <|vision_start|>, one <|image_pad|> per merged patch, <|vision_end|>.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/command.h"
#include "cli/engine_options.h"
#include "fk/status.h"
#include "models/vlm/qwen3_vl/image_encoder.h"
#include "models/vlm/qwen3_vl/image_processor.h"
#include "models/vlm/qwen3_vl/image_prompt.h"

namespace fk::cli {
namespace {

struct GenerateCli {
  EngineOptions engine;
  std::vector<std::string> prompts = {"1 2 3 4 5 6 7 8"};
  int64_t max_tokens = 16;
  float temperature = 0.0f;
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  int64_t request_seed = -1;
  bool ignore_eos = false;
  bool json = false;
  std::vector<std::string> images;  // files, in prompt order (every prompt gets them)
};

std::vector<int64_t> parse_ids(const std::string& text) {
  std::vector<int64_t> ids;
  std::string s = text;
  for (char& ch : s)
    if (ch == ',') ch = ' ';
  std::istringstream in(s);
  std::string tok;
  while (in >> tok) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(tok, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    FK_CHECK(used == tok.size(), "--prompt takes token ids (integers separated by spaces or commas); got '", tok, "'");
    ids.push_back(v);
  }
  FK_CHECK(!ids.empty(), "--prompt '", text, "' holds no token ids");
  return ids;
}

void run(const GenerateCli& o) {
  engine::Engine e(o.engine.to_config());
  engine::SamplingParams p;
  p.max_tokens = o.max_tokens;
  p.temperature = o.temperature;
  p.top_k = o.top_k;
  p.top_p = o.top_p;
  p.min_p = o.min_p;
  p.ignore_eos = o.ignore_eos;
  if (o.request_seed >= 0) p.seed = static_cast<uint64_t>(o.request_seed);
  std::vector<std::vector<int64_t>> prompts;
  for (const std::string& s : o.prompts) prompts.push_back(parse_ids(s));
  std::vector<engine::GenerationResult> results;
  if (o.images.empty()) {
    results = e.generate(prompts, p);
  } else {
    const auto* vl = dynamic_cast<const models::vlm::Qwen3VLImageEncoder*>(e.image_encoder());
    FK_CHECK(vl != nullptr, "--image: model '", o.engine.to_config().model, "' reads no images");
    const models::vlm::ImageProcessorOptions po = models::vlm::qwen3_vl_processor_options(vl->config(), vl->max_patches());
    std::vector<models::vlm::ProcessedImage> processed;
    for (const std::string& f : o.images)
      processed.push_back(models::vlm::qwen3_vl_process_image(models::vlm::load_rgb_image(f), vl->config(), po));
    std::map<std::string, size_t> order;
    for (size_t i = 0; i < prompts.size(); ++i) {
      models::vlm::ImagePrompt ip = models::vlm::qwen3_vl_image_prompt(*vl, processed);
      ip.ids.insert(ip.ids.end(), prompts[i].begin(), prompts[i].end());
      order[e.add_request(ip.ids, p, concat("generate-", i), ip.images)] = i;
    }
    results.resize(prompts.size());
    while (e.has_unfinished())
      for (engine::GenerationResult& g : e.step()) results[order.at(g.id)] = std::move(g);
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : results) {
    if (o.json) {
      out.push_back({{"prompt", r.prompt_tokens}, {"tokens", r.output_tokens},
                     {"finish_reason", engine::finish_reason_name(r.finish_reason)}});
      continue;
    }
    std::string line;
    for (int64_t t : r.output_tokens) {
      if (!line.empty()) line += ' ';
      line += std::to_string(t);
    }
    std::printf("%s\t(%s)\n", line.c_str(), engine::finish_reason_name(r.finish_reason));
  }
  if (o.json) std::printf("%s\n", out.dump(2).c_str());
}

void setup(CLI::App& app) {
  static GenerateCli o;
  auto* cmd = app.add_subcommand("generate", "Generate tokens for prompts given as token ids");
  o.engine.add_to(cmd);
  cmd->add_option("--prompt", o.prompts, "Prompt token ids (\"1 2 3\"); repeat for a batch")->capture_default_str();
  cmd->add_option("--max-tokens", o.max_tokens, "Output tokens per prompt at most")->capture_default_str();
  cmd->add_option("--temperature", o.temperature, "0 = greedy")->capture_default_str();
  cmd->add_option("--top-k", o.top_k, "0 = off");
  cmd->add_option("--top-p", o.top_p, "1 = off");
  cmd->add_option("--min-p", o.min_p, "0 = off");
  cmd->add_option("--request-seed", o.request_seed, "Sampling seed of every prompt (default: derived per request)");
  cmd->add_flag("--ignore-eos", o.ignore_eos, "Do not stop at the model's EOS tokens");
  cmd->add_flag("--json", o.json, "JSON output");
  cmd->add_option("--image", o.images,
                  "PNG or JPEG placed before every prompt's ids (models that read images: Qwen3-VL); repeatable");
  cmd->callback([] { run(o); });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
