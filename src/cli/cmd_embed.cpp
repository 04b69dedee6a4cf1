// `fk embed --model M [--input F]`: a text encoder of the Batch pattern (BGE-M3) over a batch
// of token id sequences, printing each sequence's embeddings as JSON: the dense vector, and
// with BGE-M3's heads the lexical (sparse) weights per token id and the ColBERT vectors.
// A ColBERT model (ColBERTv2) takes queries and documents instead and adds their MaxSim
// scores (embed_colbert.h).
// Input: a JSON file holding a list of token id lists, or {"input_ids": [[...], ...]} (the
// tokenizer's output; a text tokenizer for XLM-R is not part of the engine yet). Without
// --input, a batch of random sequences of a fixed seed (CLS ... EOS) is embedded.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cli/batch_cli.h"
#include "cli/command.h"
#include "cli/embed_colbert.h"
#include "cli/model_lookup.h"
#include "cli/variant_option.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "models/encoder/embed_batch.h"

namespace fk::cli {
namespace {

using nlohmann::json;

struct EmbedCli {
  std::string model = "tiny-bge-m3";
  std::string input;
  std::string device = "auto";
  std::string dtype = "f16";
  std::string outputs = "dense,sparse,colbert";
  bool hidden_states = false;
  uint64_t seed = 0;
  int64_t batch = 4;
  int64_t length = 16;
  std::string json_out;
  std::string tokenizer;
  std::vector<std::string> variants;
};

std::vector<std::vector<int32_t>> read_sequences(const std::string& path) {
  std::ifstream f(path);
  FK_CHECK(f.good(), "embed: cannot read --input ", path);
  json j;
  try {
    f >> j;
  } catch (const json::exception& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "embed: --input ", path, " is not valid JSON: ", e.what());
  }
  if (j.is_object() && j.contains("input_ids")) j = j["input_ids"];
  FK_CHECK(j.is_array(), "embed: --input ", path, " must hold a list of token id lists or {\"input_ids\": [...]}");
  std::vector<std::vector<int32_t>> seqs;
  for (size_t s = 0; s < j.size(); ++s) {
    FK_CHECK(j[s].is_array(), "embed: --input sequence ", s, " is not a list of token ids");
    std::vector<int32_t> ids;
    for (const json& t : j[s]) {
      FK_CHECK(t.is_number_integer(), "embed: --input sequence ", s, " holds ", t.dump(), ", not a token id");
      ids.push_back(t.get<int32_t>());
    }
    seqs.push_back(std::move(ids));
  }
  return seqs;
}

std::vector<std::vector<int32_t>> random_sequences(const EmbedCli& o, const models::encoder::XlmRobertaConfig& c) {
  FK_CHECK(o.batch > 0 && o.length >= 2, "embed: --batch must be positive and --length at least 2 (CLS and EOS)");
  FK_CHECK(o.length <= c.max_tokens_per_sequence(), "embed: --length ", o.length, " exceeds the ",
           c.max_tokens_per_sequence(), " tokens the model's positions hold");
  std::mt19937_64 rng(o.seed + 1);
  std::uniform_int_distribution<int32_t> token(4, static_cast<int32_t>(c.vocab_size - 1));
  std::vector<std::vector<int32_t>> seqs(static_cast<size_t>(o.batch));
  for (auto& s : seqs) {
    s.push_back(static_cast<int32_t>(c.bos_token_id));
    for (int64_t i = 2; i < o.length; ++i) s.push_back(token(rng));
    s.push_back(static_cast<int32_t>(c.eos_token_id));
  }
  return seqs;
}

json rows_json(const std::vector<float>& m, int64_t width) {
  json rows = json::array();
  for (size_t r = 0; width > 0 && r < m.size() / static_cast<size_t>(width); ++r)
    rows.push_back(std::vector<float>(m.begin() + static_cast<int64_t>(r) * width,
                                      m.begin() + static_cast<int64_t>(r + 1) * width));
  return rows;
}

// ColBERT: queries and documents, their vectors and MaxSim scores.
void run_colbert(const EmbedCli& o, const models::ModelSource& src, models::encoder::XlmRobertaModel& model,
                 const std::string& device, bool vectors) {
  const auto& settings = *model.config().colbert;
  const json texts = colbert_texts({o.input, o.tokenizer, o.seed, o.batch, o.length}, model.config());
  int64_t tokens_q = 0, tokens_d = 0;
  for (const json& q : texts["queries"]) (void)q, tokens_q += settings.query_maxlen;
  for (const json& d : texts["documents"])
    tokens_d += std::min<int64_t>(static_cast<int64_t>(d.size()) + 3, settings.doc_maxlen);
  models::LoadOptions lo;
  lo.device = device == "cuda" ? Device::cuda() : Device::cpu();
  lo.dtype = o.dtype == "f16" ? DType::f16 : DType::bf16;
  lo.checkpoint = src.checkpoint;
  lo.seed = o.seed;
  lo.max_tokens = std::max<int64_t>({tokens_q, tokens_d, 1});
  lo.max_seqs = std::max<int64_t>({static_cast<int64_t>(texts["queries"].size()),
                                   static_cast<int64_t>(texts["documents"].size()), 1});
  model.load(lo);
  json j = colbert_embed(model, texts, vectors);
  j.update(json{{"model", o.model},
                {"architecture", src.registration->architecture},
                {"weights", src.preset ? "dummy" : "checkpoint"},
                {"device", device},
                {"dtype", o.dtype},
                {"dim", settings.dim},
                {"command", invoked_command()}});
  emit_json(j, o.json_out, "embed",
             concat("scored ", texts["queries"].size(), " queries against ", texts["documents"].size(),
                    " documents with ", o.model, " on ", device));
}

void run(const EmbedCli& o) {
  select_variants(o.variants);
  const std::string device = batch_device(o.device, "embed");
  batch_dtype16(o.dtype, "embed");
  const bool want_dense = o.outputs.find("dense") != std::string::npos;
  const bool want_sparse = o.outputs.find("sparse") != std::string::npos;
  const bool want_colbert = o.outputs.find("colbert") != std::string::npos;
  for (size_t start = 0; start <= o.outputs.size();) {
    const size_t end = std::min(o.outputs.find(',', start), o.outputs.size());
    const std::string item = o.outputs.substr(start, end - start);
    FK_CHECK(item == "dense" || item == "sparse" || item == "colbert", "embed: unknown --outputs item '", item,
             "' (dense, sparse, colbert)");
    start = end + 1;
  }

  const models::ModelSource src = lookup_model(o.model, models::RunPattern::batch, device, "fk embed");
  std::unique_ptr<models::Model> m = models::create_model_from_config(src.config_json, src.source);
  auto* model = dynamic_cast<models::encoder::XlmRobertaModel*>(m.get());
  FK_CHECK(model != nullptr, "embed: model '", o.model, "' (architecture '", src.registration->architecture,
           "') is not a text encoder this command runs");
  if (model->config().colbert) return run_colbert(o, src, *model, device, want_colbert);
  FK_CHECK(o.tokenizer.empty(), "embed: --tokenizer is for a ColBERT model's string queries and documents");
  const auto sequences = o.input.empty() ? random_sequences(o, model->config()) : read_sequences(o.input);
  FK_CHECK(!sequences.empty(), "embed: no sequences to embed");
  int64_t tokens = 0;
  for (const auto& s : sequences) tokens += static_cast<int64_t>(s.size());

  models::LoadOptions lo;
  lo.device = device == "cuda" ? Device::cuda() : Device::cpu();
  lo.dtype = o.dtype == "f16" ? DType::f16 : DType::bf16;
  lo.checkpoint = src.checkpoint;
  lo.seed = o.seed;
  lo.max_tokens = std::max<int64_t>(tokens, 1);
  lo.max_seqs = static_cast<int64_t>(sequences.size());
  model->load(lo);
  FK_CHECK(model->has_heads() || (!want_sparse && !want_colbert), "embed: model '", o.model,
           "' has no BGE-M3 sparse/ColBERT heads (sparse_linear.*, colbert_linear.* beside its checkpoint); "
           "ask for --outputs dense");
  const auto out = models::encoder::embed_batch(*model, sequences, {.hidden_states = o.hidden_states});

  const int64_t h = model->config().hidden_size;
  json results = json::array();
  for (size_t s = 0; s < out.size(); ++s) {
    json r{{"index", s}, {"tokens", out[s].tokens}};
    if (want_dense) r["dense_vecs"] = out[s].dense;
    if (want_sparse) {
      json lex = json::object();
      for (const auto& [id, w] : out[s].lexical_weights) lex[std::to_string(id)] = w;
      r["lexical_weights"] = lex;
    }
    if (want_colbert) r["colbert_vecs"] = rows_json(out[s].colbert, h);
    if (o.hidden_states) r["last_hidden_state"] = rows_json(out[s].last_hidden_state, h);
    results.push_back(std::move(r));
  }
  json j{{"model", o.model},
         {"architecture", src.registration->architecture},
         {"weights", src.preset ? "dummy" : "checkpoint"},
         {"device", device},
         {"dtype", o.dtype},
         {"hidden_size", h},
         {"sequences", static_cast<int64_t>(sequences.size())},
         {"tokens", tokens},
         {"inputs", sequences},
         {"data", results},
         {"command", invoked_command()}};
  emit_json(j, o.json_out, "embed",
             concat("embedded ", sequences.size(), " sequences (", tokens, " tokens) with ", o.model, " on ", device));
}

void setup(CLI::App& app) {
  static EmbedCli o;
  auto* cmd = app.add_subcommand("embed", "Embeddings of token id sequences by a text encoder (BGE-M3: dense, "
                                          "sparse lexical weights, ColBERT vectors) as JSON");
  cmd->add_option("--model", o.model, kModelHelp)->capture_default_str();
  cmd->add_option("--input", o.input,
                  "JSON file: a list of token id lists, or {\"input_ids\": [...]}; a ColBERT model: {\"queries\": "
                  "[...], \"documents\": [...]} (token id lists or strings); default: random sequences");
  cmd->add_option("--tokenizer", o.tokenizer, "tokenizer.json for a ColBERT model's string queries and documents");
  cmd->add_option("--device", o.device, "cpu, cuda or auto")->capture_default_str();
  cmd->add_option("--dtype", o.dtype, "Model dtype: f16 or bf16")->capture_default_str();
  cmd->add_option("--outputs", o.outputs, "Comma-separated: dense, sparse, colbert")->capture_default_str();
  cmd->add_flag("--hidden-states", o.hidden_states, "Also print last_hidden_state per token");
  cmd->add_option("--seed", o.seed, "Seed of dummy weights and random inputs")->capture_default_str();
  cmd->add_option("--batch", o.batch, "Random input: sequences")->capture_default_str();
  cmd->add_option("--length", o.length, "Random input: tokens per sequence, CLS and EOS included")
      ->capture_default_str();
  cmd->add_option("--json-out", o.json_out, "Write the JSON to this file instead of stdout");
  add_variant_option(cmd, o.variants);
  cmd->callback([] { run(o); });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
