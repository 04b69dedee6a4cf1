// `fk bench embed`: a text encoder (BGE-M3 and the other XLM-R models) on batches of B
// random sequences of L tokens (CLS ... EOS): warm-up runs, then the median of timed runs
// of the forward pass alone (ids on the device in, last_hidden_state and the heads' outputs
// on the device out: what a peer's model(**batch) is timed on) and of the whole embed call
// (packing, the forward, the outputs to the host and BGE-M3's pooling there).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "cli/bench_embed.h"
#include "cli/command.h"
#include "cli/model_lookup.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "harness/device/device_info.h"
#include "models/encoder/embed_batch.h"
#include "models/encoder/xlm_roberta_model.h"

namespace fk::cli {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct BenchEmbedCli {
  std::string model = "tiny-bge-m3";
  std::string device = "auto";
  std::string dtype = "f16";
  int64_t batch_size = 32, seq_len = 512, warmup = 2, iters = 10;
  uint64_t seed = 0;
  std::string out;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Tensor i32_on(const std::vector<int32_t>& values, Device device) {
  Tensor host = Tensor::empty({static_cast<int64_t>(values.size())}, DType::i32);
  std::copy(values.begin(), values.end(), host.data_as<int32_t>());
  return device.is_cpu() ? host : host.to(device);
}

void run(const BenchEmbedCli& o) {
  FK_CHECK(o.batch_size > 0 && o.seq_len >= 2 && o.iters > 0 && o.warmup >= 0,
           "bench embed: --batch-size and --iters must be positive, --seq-len at least 2, --warmup not negative");
  std::string device = o.device == "auto" ? (rt::cuda_available() ? "cuda" : "cpu") : o.device;
  FK_CHECK(device == "cpu" || device == "cuda", "bench embed: --device must be cpu, cuda or auto, got ", o.device);
  FK_CHECK(o.dtype == "f16" || o.dtype == "bf16", "bench embed: --dtype must be f16 or bf16, got ", o.dtype);
  const models::ModelSource src = lookup_model(o.model, models::RunPattern::batch, device, "fk bench embed");
  std::unique_ptr<models::Model> m = models::create_model_from_config(src.config_json, src.source);
  auto* model = dynamic_cast<models::encoder::XlmRobertaModel*>(m.get());
  FK_CHECK(model != nullptr, "bench embed: model '", o.model, "' is not a text encoder this command runs");
  const auto& c = model->config();
  FK_CHECK(o.seq_len <= c.max_tokens_per_sequence(), "bench embed: --seq-len ", o.seq_len, " exceeds the ",
           c.max_tokens_per_sequence(), " tokens the model's positions hold");

  models::LoadOptions lo;
  lo.device = device == "cuda" ? Device::cuda() : Device::cpu();
  lo.dtype = o.dtype == "f16" ? DType::f16 : DType::bf16;
  lo.checkpoint = src.checkpoint;
  lo.seed = o.seed;
  lo.max_tokens = o.batch_size * o.seq_len;
  lo.max_seqs = o.batch_size;
  model->load(lo);

  std::mt19937_64 rng(o.seed + 1);
  std::uniform_int_distribution<int32_t> token(4, static_cast<int32_t>(c.vocab_size - 1));
  std::vector<std::vector<int32_t>> seqs(static_cast<size_t>(o.batch_size));
  std::vector<int32_t> ids, positions, cu = {0};
  for (auto& s : seqs) {
    s.push_back(static_cast<int32_t>(c.bos_token_id));
    for (int64_t i = 2; i < o.seq_len; ++i) s.push_back(token(rng));
    s.push_back(static_cast<int32_t>(c.eos_token_id));
    const auto pos = models::encoder::encoder_position_ids(s, c);
    ids.insert(ids.end(), s.begin(), s.end());
    positions.insert(positions.end(), pos.begin(), pos.end());
    cu.push_back(static_cast<int32_t>(ids.size()));
  }
  const Tensor ids_t = i32_on(ids, lo.device), pos_t = i32_on(positions, lo.device), cu_t = i32_on(cu, lo.device);
  const Tensor cu_host = i32_on(cu, Device::cpu());
  models::StepInputs in;
  in.tensors = {{"input_ids", ids_t}, {"position_ids", pos_t}, {"cu_seqlens", cu_t}, {"cu_seqlens_host", cu_host}};

  std::vector<double> forward_s, embed_s;
  for (int64_t it = 0; it < o.warmup + o.iters; ++it) {
    const auto t0 = Clock::now();
    model->plan(in, lo.stream);
    model->forward(in, lo.stream);
    rt::stream_synchronize(lo.stream);
    const auto t1 = Clock::now();
    models::encoder::embed_batch(*model, seqs);
    const auto t2 = Clock::now();
    if (it < o.warmup) continue;
    forward_s.push_back(std::chrono::duration<double>(t1 - t0).count());
    embed_s.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  const double tokens = static_cast<double>(o.batch_size * o.seq_len);
  json j{{"bench", "embed"},
         {"model", o.model},
         {"dtype", o.dtype},
         {"backend", device},
         {"batch_size", o.batch_size},
         {"seq_len", o.seq_len},
         {"iters", o.iters},
         {"median_forward_s", median(forward_s)},
         {"median_embed_s", median(embed_s)},
         {"forward_tokens_per_s", tokens / median(forward_s)},
         {"embed_sequences_per_s", static_cast<double>(o.batch_size) / median(embed_s)},
         {"forward_s", forward_s},
         {"embed_s", embed_s},
         {"timestamp", bench::utc_timestamp()},
         {"command", invoked_command()}};
  if (device == "cuda") j["device"] = bench::to_json(bench::query_gpu(0));
  else j["host"] = bench::to_json(bench::query_host());
  std::printf("%s %s, %lld x %lld tokens: forward %.3f ms (%.0f tokens/s), embed %.3f ms\n", o.model.c_str(),
              device.c_str(), static_cast<long long>(o.batch_size), static_cast<long long>(o.seq_len),
              1e3 * median(forward_s), tokens / median(forward_s), 1e3 * median(embed_s));
  if (!o.out.empty()) {
    std::ofstream f(o.out);
    FK_CHECK(f.good(), "bench embed: cannot write ", o.out);
    f << j.dump(2) << "\n";
  }
}

}  // namespace

void add_bench_embed(CLI::App* bench) {
  static BenchEmbedCli o;
  auto* cmd = bench->add_subcommand("embed", "A text encoder (Batch pattern) on B random sequences of L tokens: "
                                             "median forward and embed time");
  cmd->add_option("--model", o.model, kModelHelp)->capture_default_str();
  cmd->add_option("--device", o.device, "cpu, cuda or auto")->capture_default_str();
  cmd->add_option("--dtype", o.dtype, "f16 or bf16")->capture_default_str();
  cmd->add_option("--batch-size", o.batch_size)->capture_default_str();
  cmd->add_option("--seq-len", o.seq_len, "Tokens per sequence, CLS and EOS included")->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "Runs not counted")->capture_default_str();
  cmd->add_option("--iters", o.iters, "Runs counted (median)")->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of the dummy weights and the sequences")->capture_default_str();
  cmd->add_option("--json-out", o.out, "Also write the JSON result to this file");
  cmd->callback([] { run(o); });
}

}  // namespace fk::cli
