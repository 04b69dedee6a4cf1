#include "harness/capture/capture_batch.h"

#include <algorithm>
#include <random>

#include "fk/runtime.h"
#include "fk/status.h"
#include "models/encoder/embed_batch.h"
#include "models/encoder/xlm_roberta_model.h"

namespace fk::e2e {

BatchWorkload batch_workload(const std::string& name) {
  BatchWorkload w{name, {}};
  if (name == "tiny") {
    w.lengths.assign(4, 16);
  } else if (name == "mixed") {
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<int64_t> len(16, 512);
    for (int i = 0; i < 32; ++i) w.lengths.push_back(len(rng));
  } else {
    const std::string refusal =
        concat("capture: batch workload '", name, "' is not tiny, mixed or BxL (two positive integers, e.g. 32x512)");
    const size_t x = name.find('x');
    FK_CHECK(x != std::string::npos, refusal);
    const int64_t b = workload_count(std::string_view(name).substr(0, x), refusal);
    const int64_t l = workload_count(std::string_view(name).substr(x + 1), refusal);
    FK_CHECK(l >= 2, "capture: batch workload '", name, "': a sequence holds at least CLS and EOS (L >= 2)");
    w.lengths.assign(static_cast<size_t>(b), l);
  }
  return w;
}

std::vector<std::vector<int32_t>> batch_sequences(const BatchWorkload& workload,
                                                  const models::encoder::XlmRobertaConfig& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> token(4, static_cast<int32_t>(c.vocab_size - 1));
  std::vector<std::vector<int32_t>> sequences;
  for (const int64_t n : workload.lengths) {
    FK_CHECK(n <= c.max_tokens_per_sequence(), "workload '", workload.name, "' has a sequence of ", n,
             " tokens; the model's positions hold ", c.max_tokens_per_sequence());
    std::vector<int32_t> s{static_cast<int32_t>(c.bos_token_id)};
    for (int64_t i = 2; i < n; ++i) s.push_back(token(rng));
    s.push_back(static_cast<int32_t>(c.eos_token_id));
    sequences.push_back(std::move(s));
  }
  return sequences;
}

CaptureResult capture_text_encoder(const models::ModelSource& model, const BatchWorkload& workload,
                                   const BatchCaptureOptions& options) {
  std::unique_ptr<models::Model> m = models::create_model_from_config(model.config_json, model.source);
  auto* encoder = dynamic_cast<models::encoder::XlmRobertaModel*>(m.get());
  FK_CHECK(encoder != nullptr, "capture: model '", model.source, "' (architecture '",
           model.registration ? model.registration->architecture : std::string("?"),
           "') is not a text encoder of the Batch pattern that capture can run");
  const auto sequences = batch_sequences(workload, encoder->config(), options.seed + 1);
  int64_t tokens = 0;
  for (const auto& s : sequences) tokens += static_cast<int64_t>(s.size());
  models::LoadOptions lo;
  lo.device = options.backend == DeviceType::cuda ? Device::cuda() : Device::cpu();
  lo.dtype = options.dtype;
  lo.checkpoint = model.checkpoint;
  lo.seed = options.seed;
  lo.max_tokens = tokens;
  lo.max_seqs = static_cast<int64_t>(sequences.size());
  encoder->load(lo);
  // One pass unrecorded first: lazy set-up (GEMM algorithm choice, workspaces) is no op time.
  models::encoder::embed_batch(*encoder, sequences);
  const std::string category = encoder->task_category();
  return capture_calls([&] { models::encoder::embed_batch(*encoder, sequences); },
                       options.backend == DeviceType::cuda, category);
}

}  // namespace fk::e2e
