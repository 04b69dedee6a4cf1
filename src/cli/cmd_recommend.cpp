// `fk recommend --model M`: a recommendation model of the Batch pattern (DLRM) over a batch
// of random samples of a fixed seed (dense features in [0, 4), MLPerf's log(1 + count) range;
// per table a bag of --bag-size ids, uniform in the table), printing the click probabilities'
// summary as JSON: their mean, an XXH64 checksum of the logits' bytes, the first few, and the
// median time of --iters forward passes over the packed batch on the device (the samples'
// packing and upload, done once, are timed apart). No dataset reader: the command exercises
// the model end to end at the shapes it is given.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/batch_cli.h"
#include "cli/command.h"
#include "cli/model_lookup.h"
#include "cli/variant_option.h"
#include "core/safetensors/safetensors.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "harness/capture/capture_recommend.h"
#include "models/recsys/dlrm/dlrm_predict.h"

namespace fk::cli {
namespace {

using nlohmann::json;

struct RecommendCli {
  std::string model = "tiny-dlrmv2";
  std::string device = "auto";
  std::string dtype = "bf16";
  uint64_t seed = 0;
  int64_t batch = 16;
  int64_t bag_size = 1;  // MLPerf's one-hot Criteo; DLRMv2's multi-hot bags hold up to 100
  int64_t iters = 1;
  std::string json_out;
  std::vector<std::string> variants;
};

void run(const RecommendCli& o) {
  select_variants(o.variants);
  const std::string device = batch_device(o.device, "recommend");
  const DType dtype = batch_dtype16(o.dtype, "recommend");
  FK_CHECK(o.batch >= 1 && o.bag_size >= 0 && o.iters >= 1, "recommend: --batch and --iters must be positive and ",
           "--bag-size not negative, got ", o.batch, ", ", o.iters, " and ", o.bag_size);
  const models::ModelSource src = lookup_model(o.model, models::RunPattern::batch, device, "fk recommend");
  std::unique_ptr<models::Model> m = models::create_model_from_config(src.config_json, src.source);
  auto* model = dynamic_cast<models::recsys::DlrmModel*>(m.get());
  FK_CHECK(model != nullptr, "recommend: model '", o.model, "' (architecture '", src.registration->architecture,
           "') is not a recommendation model this command runs");
  models::LoadOptions lo;
  lo.device = device == "cuda" ? Device::cuda() : Device::cpu();
  lo.dtype = dtype;
  lo.checkpoint = src.checkpoint;
  lo.seed = o.seed;
  lo.max_tokens = o.batch;
  lo.max_seqs = o.batch;
  model->load(lo);

  e2e::RecommendWorkload w;  // the samples fk capture and fk e2e draw, at this command's shape
  w.samples = o.batch;
  w.bag_size = o.bag_size;
  const auto samples = e2e::recommend_samples(w, model->config(), o.seed + 1);
  const auto t0 = std::chrono::steady_clock::now();
  const models::recsys::DlrmBatch batch = models::recsys::dlrm_pack(*model, samples);
  rt::stream_synchronize(lo.stream);
  const double pack_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<models::recsys::DlrmPrediction> out;
  const double seconds = median_run_seconds(o.iters, [&] { out = models::recsys::dlrm_run(*model, batch); });

  std::vector<float> logits;
  double mean = 0;
  for (const auto& p : out) logits.push_back(p.logit), mean += p.probability;
  mean /= static_cast<double>(out.size());
  json first = json::array();
  for (size_t i = 0; i < std::min<size_t>(out.size(), 8); ++i) first.push_back(out[i].probability);
  const json j{{"model", o.model},
               {"architecture", src.registration->architecture},
               {"weights", src.preset ? "dummy" : "checkpoint"},
               {"device", device},
               {"dtype", o.dtype},
               {"samples", o.batch},
               {"bag_size", o.bag_size},
               {"seconds", seconds},  // the median forward pass (--iters), logits back on the host
               {"samples_per_s", static_cast<double>(o.batch) / seconds},
               {"pack_seconds", pack_s},
               {"iters", o.iters},
               {"mean_probability", mean},
               {"first_probabilities", first},
               {"logits_checksum", safetensors::hash_hex(safetensors::content_hash64(logits.data(),
                                                                                     logits.size() * sizeof(float)))},
               {"command", invoked_command()}};
  char done[160];
  std::snprintf(done, sizeof done, "scored %lld samples with %s on %s in %.3f ms", static_cast<long long>(o.batch),
                o.model.c_str(), device.c_str(), seconds * 1e3);
  emit_json(j, o.json_out, "recommend", done);
}

void setup(CLI::App& app) {
  static RecommendCli o;
  auto* cmd = app.add_subcommand("recommend", "Click probabilities of a recommendation model (DLRM) on random "
                                              "samples, with the forward pass's median time, as JSON");
  cmd->add_option("--model", o.model, kModelHelp)->capture_default_str();
  cmd->add_option("--device", o.device, "cpu, cuda or auto")->capture_default_str();
  cmd->add_option("--dtype", o.dtype, "Model dtype: f16 or bf16")->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of dummy weights and random samples")->capture_default_str();
  cmd->add_option("--batch", o.batch, "Samples in the batch")->capture_default_str();
  cmd->add_option("--bag-size", o.bag_size, "Ids per table and sample (1: one-hot)")->capture_default_str();
  cmd->add_option("--iters", o.iters, "Timed forward passes after a warm-up (seconds: their median); 1: one, "
                                      "no warm-up")
      ->capture_default_str();
  cmd->add_option("--json-out", o.json_out, "Write the JSON to this file instead of stdout");
  add_variant_option(cmd, o.variants);
  cmd->callback([] { run(o); });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
