// Checks the engine against HF transformers goldens (tests/data/models/<family>/, made by
// make_goldens.py): the logits of one prefill over prompt + generated tokens, and greedy
// generation through the whole engine (scheduler, runner, sampler). Shared by the CPU test
// and the GPU test.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serving/generate/engine.h"
#include "runtime/state/kv_cache.h"
#include "models/llm/decoder_model.h"
#include "models/llm/weights.h"
#include "fk/element.h"
#include "models/llm/model_config.h"
#include "fk/runtime.h"
#include "core/safetensors/safetensors.h"

namespace fk::engine::test {

inline std::string model_dir(const std::string& family) { return std::string(FK_SOURCE_DIR) + "/tests/data/models/" + family; }

struct Golden {
  std::vector<std::vector<int64_t>> prompts, generated;
  std::vector<std::vector<float>> logits;  // [prompt + generated, V] row-major, per prompt
  int64_t vocab = 0;
};

inline Golden load_golden(const std::string& family) {
  Golden g;
  std::ifstream f(model_dir(family) + "/golden.json");
  const nlohmann::json j = nlohmann::json::parse(f);
  g.prompts = j.at("prompts").get<std::vector<std::vector<int64_t>>>();
  g.generated = j.at("generated").get<std::vector<std::vector<int64_t>>>();
  const auto file = safetensors::File::open(model_dir(family) + "/golden.safetensors");
  for (size_t i = 0; i < g.prompts.size(); ++i) {
    const TensorView v = file.view("logits." + std::to_string(i));
    g.vocab = v.shape[1];
    const float* p = static_cast<const float*>(v.data);
    g.logits.emplace_back(p, p + v.numel());
  }
  return g;
}

// Largest minus second-largest logit of one row.
inline double top2_margin(const float* row, int64_t n) {
  double a = -INFINITY, b = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    if (row[i] > a) {
      b = a;
      a = row[i];
    } else if (row[i] > b) {
      b = row[i];
    }
  }
  return a - b;
}

// Logits of every position of `tokens` in one prefill (one sequence on pages 0..n).
inline std::vector<float> prefill_logits(DecoderModel& model, KvCache& kv, const std::vector<int64_t>& tokens,
                                         void* stream) {
  const Device dev = model.device();
  const int64_t T = static_cast<int64_t>(tokens.size()), S = kv.page_size(), pages = (T + S - 1) / S;
  std::vector<int32_t> ids, logit_rows, kv_indices;
  std::vector<int64_t> pos, slots;
  for (int64_t i = 0; i < T; ++i) {
    ids.push_back(static_cast<int32_t>(tokens[static_cast<size_t>(i)]));
    pos.push_back(i);
    slots.push_back(i);
    logit_rows.push_back(static_cast<int32_t>(i));
  }
  for (int64_t p = 0; p < pages; ++p) kv_indices.push_back(static_cast<int32_t>(p));
  const std::vector<int32_t> qo = {0, static_cast<int32_t>(T)}, kvp = {0, static_cast<int32_t>(pages)},
                             last = {static_cast<int32_t>(T - (pages - 1) * S)};
  auto upload = [&](const auto& v, DType t, Device d) {
    Tensor x = Tensor::empty({static_cast<int64_t>(v.size())}, t, d, stream);
    rt::memcpy_sync(x.data(), d, v.data(), Device::cpu(), v.size() * sizeof(v[0]));
    return x;
  };
  const Tensor t_ids = upload(ids, DType::i32, dev), t_pos = upload(pos, DType::i64, dev),
               t_slots = upload(slots, DType::i64, dev), t_rows = upload(logit_rows, DType::i32, dev),
               t_qo = upload(qo, DType::i32, dev), t_kvp = upload(kvp, DType::i32, dev),
               t_kvi = upload(kv_indices, DType::i32, dev), t_last = upload(last, DType::i32, dev),
               h_qo = upload(qo, DType::i32, Device::cpu()), h_kvp = upload(kvp, DType::i32, Device::cpu()),
               h_last = upload(last, DType::i32, Device::cpu());
  ForwardBatch b;
  b.num_tokens = T;
  b.num_seqs = 1;
  b.num_logits = T;
  b.input_ids = t_ids;
  b.positions = t_pos;
  b.slot_mapping = t_slots;
  b.logits_indices = t_rows;
  b.qo_indptr = t_qo;
  b.kv_indptr = t_kvp;
  b.kv_indices = t_kvi;
  b.kv_last_page_len = t_last;
  b.qo_indptr_host = h_qo;
  b.kv_indptr_host = h_kvp;
  b.kv_last_page_len_host = h_last;
  model.plan(b, kv, false, stream);
  const TensorView logits = model.forward(b, kv, stream);
  if (dev.is_cuda()) rt::stream_synchronize(stream);
  std::vector<uint8_t> bytes(static_cast<size_t>(logits.nbytes()));
  rt::memcpy_sync(bytes.data(), Device::cpu(), logits.data, logits.device, bytes.size());
  std::vector<float> out(static_cast<size_t>(logits.numel()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<float>(load_element(bytes.data() + i * dtype_size(logits.dtype), logits.dtype));
  return out;
}

// Relative tolerance of the bf16 engine against the float32 reference: |x - ref| within
// kLogitTol * (the reference's largest |logit| of the row). bf16 keeps 8 bits and each
// layer rounds its activations a few times: about 1% was measured on every family.
inline constexpr double kLogitTol = 0.02;
// A greedy choice is "clear" when the top-2 margin exceeds twice the logit tolerance: no
// rounding within tolerance can flip it. Near ties of these random models are common, so
// tokens are compared with HF only up to the first unclear one (after it, a legitimate
// flip makes everything differ), and, teacher-forced, against the engine's own prefill.
inline constexpr double kClearMargin = 2 * kLogitTol;

inline double row_scale(const float* row, int64_t n) {
  double s = 0;
  for (int64_t v = 0; v < n; ++v) s = std::max(s, std::fabs(static_cast<double>(row[v])));
  return s;
}

inline void check_family(const std::string& family, DeviceType backend) {
  SCOPED_TRACE(family);
  // Missing data is a failure, not a skip: every family listed must have its goldens.
  ASSERT_TRUE(std::filesystem::exists(model_dir(family) + "/golden.json"))
      << "no golden data for " << family << " in " << model_dir(family)
      << " (tests/data/models/make_goldens.py writes it)";
  const Golden g = load_golden(family);
  EngineStream stream(backend == DeviceType::cuda);
  const Device dev = backend == DeviceType::cuda ? Device::cuda(0) : Device::cpu();
  const ModelSpec spec = model_spec_for(load_model_config(model_dir(family)));
  const auto ckpt = safetensors::Checkpoint::open(model_dir(family));
  DecoderModel model(spec, load_checkpoint_weights(spec, ckpt, DType::bf16, dev, stream.get()), dev, 128, 4, 128, 512,
                     stream.get());
  const ModelConfig& c = spec.config;
  KvCache kv(spec.num_layers(), 16, 16, c.num_key_value_heads, c.head_dim, DType::bf16, dev, stream.get());

  // 1. Logits of one prefill over prompt + generated tokens.
  for (size_t p = 0; p < g.prompts.size(); ++p) {
    std::vector<int64_t> tokens = g.prompts[p];
    tokens.insert(tokens.end(), g.generated[p].begin(), g.generated[p].end());
    const std::vector<float> got = prefill_logits(model, kv, tokens, stream.get());
    const std::vector<float>& want = g.logits[p];
    ASSERT_EQ(got.size(), want.size());
    double worst = 0;
    int64_t worst_row = 0;
    for (size_t r = 0; r < tokens.size(); ++r) {
      const float* w = want.data() + r * static_cast<size_t>(g.vocab);
      const float* x = got.data() + r * static_cast<size_t>(g.vocab);
      double scale = 0, err = 0;
      for (int64_t v = 0; v < g.vocab; ++v) {
        scale = std::max(scale, std::fabs(static_cast<double>(w[v])));
        err = std::max(err, std::fabs(static_cast<double>(x[v]) - w[v]));
      }
      if (err / scale > worst) worst = err / scale, worst_row = static_cast<int64_t>(r);
    }
    EXPECT_LE(worst, kLogitTol) << "prompt " << p << ": worst logit error at position " << worst_row;
  }

  // 2. Greedy generation through the engine.
  EngineConfig ec;
  ec.model = model_dir(family);
  ec.backend = backend;
  // A budget of 16 chunks the longer prompt, so the shorter one decodes beside its chunks:
  // the mixed steps' split (decode kernel + prefill kernel) is checked too.
  ec.max_num_batched_tokens = 16;
  ec.max_num_seqs = 8;
  ec.num_pages = 64;
  ec.max_model_len = 256;
  Engine engine(ec);
  SamplingParams sp;
  sp.temperature = 0;
  sp.ignore_eos = true;
  sp.max_tokens = static_cast<int64_t>(g.generated[0].size());
  const auto results = engine.generate(g.prompts, sp);
  int64_t compared_hf = 0, compared_self = 0, total = 0;
  for (size_t p = 0; p < g.prompts.size(); ++p) {
    const auto& want = g.generated[p];
    const auto& got = results[p].output_tokens;
    ASSERT_EQ(got.size(), want.size()) << "prompt " << p;
    total += static_cast<int64_t>(got.size());
    // Against HF, up to its first unclear choice.
    for (size_t i = 0; i < want.size(); ++i) {
      const float* row = g.logits[p].data() + (g.prompts[p].size() - 1 + i) * static_cast<size_t>(g.vocab);
      if (top2_margin(row, g.vocab) < kClearMargin * row_scale(row, g.vocab)) break;
      EXPECT_EQ(got[i], want[i]) << "prompt " << p << " token " << i << " (HF's choice was clear)";
      ++compared_hf;
    }
    // Decode steps against one prefill over the engine's own output: every clear position.
    std::vector<int64_t> seq = g.prompts[p];
    seq.insert(seq.end(), got.begin(), got.end());
    const std::vector<float> own = prefill_logits(model, kv, seq, stream.get());
    for (size_t i = 0; i < got.size(); ++i) {
      const float* row = own.data() + (g.prompts[p].size() - 1 + i) * static_cast<size_t>(g.vocab);
      if (top2_margin(row, g.vocab) < kClearMargin * row_scale(row, g.vocab)) continue;
      EXPECT_EQ(got[i], std::max_element(row, row + g.vocab) - row) << "prompt " << p << " token " << i
                                                                    << ": decode differs from prefill";
      ++compared_self;
    }
  }
  EXPECT_GT(engine.stats().mixed_steps, 0) << "the prompts should have run decode beside prefill chunks";
  EXPECT_GE(compared_hf, 1) << "no clear greedy choice of HF to compare";
  EXPECT_GE(compared_self, total / 2) << "too few clear choices in the engine's own output";
}

// A family with its own golden script (make_<family>_goldens.py) on the CPU engine: the
// teacher-forced logits of every position of prompt + generated tokens within logit_tol of
// each row's scale (one prefill per sequence), then greedy generation with a budget of 16
// (chunked prefill beside decodes) equal to transformers' tokens up to its first unclear
// choice. Skips, naming the script, while the data is absent.
inline void check_engine_golden(const std::string& family, double logit_tol) {
  if (!std::filesystem::exists(model_dir(family) + "/golden.json"))
    GTEST_SKIP() << "no golden data in " << model_dir(family)
                 << ": run tests/data/models/make_" << family << "_goldens.py tests/data/models (torch, transformers)";
  const Golden g = load_golden(family);
  EngineConfig ec;
  ec.model = model_dir(family);
  ec.backend = DeviceType::cpu;
  ec.max_num_batched_tokens = 256;
  ec.max_num_seqs = 64;  // prefill_logits reads every position as a sequence's last row
  ec.num_pages = 64;
  ec.max_model_len = 256;

  // 1. Teacher-forced logits of every position.
  {
    Engine e(ec);
    for (size_t p = 0; p < g.prompts.size(); ++p) {
      std::vector<int64_t> tokens = g.prompts[p];
      tokens.insert(tokens.end(), g.generated[p].begin(), g.generated[p].end());
      const std::vector<float> got = e.prefill_logits(tokens, static_cast<int64_t>(tokens.size()));
      const std::vector<float>& want = g.logits[p];
      ASSERT_EQ(got.size(), want.size());
      double worst = 0;
      size_t worst_row = 0;
      for (size_t r = 0; r < tokens.size(); ++r) {
        const float* w = want.data() + r * static_cast<size_t>(g.vocab);
        const float* x = got.data() + r * static_cast<size_t>(g.vocab);
        double err = 0;
        for (int64_t v = 0; v < g.vocab; ++v) err = std::max(err, std::fabs(static_cast<double>(x[v]) - w[v]));
        if (err / row_scale(w, g.vocab) > worst) worst = err / row_scale(w, g.vocab), worst_row = r;
      }
      EXPECT_LE(worst, logit_tol) << "prompt " << p << ": worst logit error at position " << worst_row;
    }
  }

  // 2. Greedy generation; a budget of 16 chunks the longer prompt beside the other's decodes.
  ec.max_num_batched_tokens = 16;
  Engine engine(ec);
  SamplingParams sp;
  sp.temperature = 0;
  sp.ignore_eos = true;
  sp.max_tokens = static_cast<int64_t>(g.generated[0].size());
  const auto results = engine.generate(g.prompts, sp);
  int64_t compared = 0;
  for (size_t p = 0; p < g.prompts.size(); ++p) {
    const auto& want = g.generated[p];
    const auto& got = results[p].output_tokens;
    ASSERT_EQ(got.size(), want.size()) << "prompt " << p;
    for (size_t i = 0; i < want.size(); ++i) {  // up to transformers' first unclear choice
      const float* row = g.logits[p].data() + (g.prompts[p].size() - 1 + i) * static_cast<size_t>(g.vocab);
      if (top2_margin(row, g.vocab) < kClearMargin * row_scale(row, g.vocab)) break;
      EXPECT_EQ(got[i], want[i]) << "prompt " << p << " token " << i << " (transformers' choice was clear)";
      ++compared;
    }
  }
  EXPECT_GT(compared, 0) << "no clear greedy choice to compare";
}

}  // namespace fk::engine::test
