// `fk bench latency | throughput | serve`: the engine end to end on random prompts (and
// `fk bench embed`, the text encoders: cmd_bench_embed.cpp).
//   latency:    one batch at a time (warm-up runs, then the median of several): time to
//               the first token (the prefill), time per decode step, tokens/s.
//   throughput: N requests submitted at once, run to completion (ignore-eos): requests/s,
//               output tokens/s, total tokens/s.
// Prompts are fresh random token ids per run, so the prefix cache cannot serve them.
//   serve:      requests (random token ids, or ShareGPT conversations) replayed against an
//               OpenAI-compatible server.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "harness/device/device_info.h"
#include "core/status_line.h"
#include "harness/time/kernel_profile.h"
#include "cli/bench_embed.h"
#include "cli/bench_summary.h"
#include "cli/command.h"
#include "cli/engine_options.h"
#include "cli/model_lookup.h"
#include "fk/op_registry.h"
#include "fk/status.h"
#include "models/vlm/qwen3_vl/image_prompt.h"
#include "serving/bench/serving_bench.h"
#include "serving/bench/sharegpt_dataset.h"

namespace fk::cli {
namespace {

using nlohmann::json;

std::vector<int64_t> random_prompt(std::mt19937_64& rng, int64_t len, int64_t vocab) {
  std::uniform_int_distribution<int64_t> tok(0, vocab - 1);
  std::vector<int64_t> p(static_cast<size_t>(len));
  for (auto& t : p) t = tok(rng);
  return p;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

json environment(const engine::Engine& e, const EngineOptions& o) {
  json j;
  j["model"] = o.model;
  j["dtype"] = o.dtype;
  if (e.spec().moe.fp8) j["quantization"] = "fp8";  // the experts' (--quantization, or an fp8 checkpoint)
  j["backend"] = e.config().backend == DeviceType::cuda ? "cuda" : "cpu";
  j["variants"] = OpRegistry::global().active_variants();  // "": every op on its default path
  if (e.config().backend == DeviceType::cuda) j["device"] = bench::to_json(bench::query_gpu(0));
  else j["host"] = bench::to_json(bench::query_host());
  j["timestamp"] = bench::utc_timestamp();
  j["command"] = invoked_command();
  const engine::EngineStats s = e.stats();
  j["engine"] = {{"num_pages", s.num_pages},
                 {"page_size", s.page_size},
                 {"weight_bytes", s.weight_bytes},
                 {"kv_bytes", s.kv_bytes},
                 {"activation_bytes", s.activation_bytes},
                 {"max_num_batched_tokens", e.config().max_num_batched_tokens},
                 {"max_num_seqs", e.config().max_num_seqs},
                 {"cuda_graphs", e.config().cuda_graphs && e.config().backend == DeviceType::cuda},
                 {"async_scheduling", e.config().async_scheduling}};
  return j;
}

// Step kinds and where the wall time went (host scheduling, host preparation, launch to
// sampled tokens, bookkeeping), to tell a slow kernel from a busy host.
json step_profile(const engine::EngineStats& s) {
  return {{"decode_steps", s.decode_steps}, {"mixed_steps", s.mixed_steps}, {"prefill_steps", s.prefill_steps},
          {"schedule_s", s.schedule_s},     {"prepare_s", s.prepare_s},     {"run_s", s.run_s},
          {"update_s", s.update_s}};
}

// The human summary (or, with --json, the JSON) on stdout, and the JSON to --json-out.
bool g_json_stdout = false;
void emit(const json& j, const std::string& path) {
  std::printf("%s", g_json_stdout ? (j.dump(2) + "\n").c_str() : bench_summary(j).c_str());
  if (path.empty()) return;
  std::ofstream f(path);
  FK_CHECK(f.good(), "cannot write ", path);
  f << j.dump(2) << "\n";
}

// The engine runs Generate models: others get a named error until their runners exist.
engine::EngineConfig bench_engine_config(const EngineOptions& o, const char* command) {
  engine::EngineConfig c = o.to_config();
  lookup_model(o.model, models::RunPattern::generate, c.backend == DeviceType::cuda ? "cuda" : "cpu", command);
  return c;
}

struct LatencyCli {
  EngineOptions engine;
  int64_t batch_size = 1, input_len = 128, output_len = 32, warmup = 2, iters = 5;
  int64_t image_size = 0;  // > 0: each prompt starts with a random image of this many pixels square
  size_t kernel_profile = 0;  // rows of the kernel profile (0: no profile run)
  std::string out;
};

// One batch from submission to its last token: wall times, and the kernel trace's clock at
// the first token and the end (0 when no trace runs).
struct BatchRun {
  double total_s = 0, prefill_s = 0, step_s = -1;
  int64_t steps_after_first = 0;
  uint64_t trace_start_ns = 0, trace_first_ns = 0, trace_end_ns = 0;
};

// --image-size: one random RGB image (of the engine's seed), processed as the model's
// processor does, placed before every prompt's text; nothing when the size is 0.
std::vector<models::vlm::ProcessedImage> bench_images(const engine::Engine& e, const LatencyCli& o) {
  if (o.image_size <= 0) return {};
  const auto* vl = dynamic_cast<const models::vlm::Qwen3VLImageEncoder*>(e.image_encoder());
  FK_CHECK(vl != nullptr, "bench latency: --image-size needs a model that reads images (Qwen3-VL); '",
           o.engine.to_config().model, "' reads none");
  models::vlm::RgbImage im{o.image_size, o.image_size, std::vector<uint8_t>(static_cast<size_t>(o.image_size * o.image_size * 3))};
  std::mt19937_64 rng(o.engine.seed + 7);
  for (uint8_t& v : im.pixels) v = static_cast<uint8_t>(rng() & 0xff);
  return {models::vlm::qwen3_vl_process_image(im, vl->config(),
                                              models::vlm::qwen3_vl_processor_options(vl->config(), vl->max_patches()))};
}

BatchRun run_batch(engine::Engine& e, const LatencyCli& o, const std::vector<models::vlm::ProcessedImage>& images,
                   std::mt19937_64& rng, bool traced) {
  const int64_t V = e.spec().config.vocab_size;
  engine::SamplingParams p;
  p.temperature = 0;
  p.max_tokens = o.output_len;
  p.ignore_eos = true;
  for (int64_t b = 0; b < o.batch_size; ++b) {
    std::vector<int64_t> text = random_prompt(rng, o.input_len, V);
    if (images.empty()) {
      e.add_request(std::move(text), p);
      continue;
    }
    const auto& vl = dynamic_cast<const models::vlm::Qwen3VLImageEncoder&>(*e.image_encoder());
    models::vlm::ImagePrompt ip = models::vlm::qwen3_vl_image_prompt(vl, images);
    ip.ids.insert(ip.ids.end(), text.begin(), text.end());
    e.add_request(std::move(ip.ids), p, "", ip.images);
  }
  const auto stamp = [traced] { return traced ? bench::kernel_trace_timestamp_ns() : uint64_t{0}; };
  BatchRun r;
  r.trace_start_ns = stamp();
  const double t0 = e.now_s();
  double t_first = -1;
  while (e.has_unfinished()) {
    std::vector<engine::StepToken> toks;
    e.step(&toks);
    if (toks.empty()) continue;
    if (t_first < 0) {
      t_first = e.now_s();
      r.trace_first_ns = stamp();
    } else {
      ++r.steps_after_first;
    }
  }
  const double t1 = e.now_s();
  r.trace_end_ns = stamp();
  r.total_s = t1 - t0;
  r.prefill_s = t_first - t0;
  if (r.steps_after_first > 0) r.step_s = (t1 - t_first) / static_cast<double>(r.steps_after_first);
  return r;
}

// One more batch with the kernel trace on (so the timed runs carry no tracing cost): the
// prefill's kernels, and the decode steps' per step. A decode step's kernels count from the
// first token on, so with asynchronous scheduling the first step's may fall to the prefill.
json latency_kernel_profile(engine::Engine& e, const LatencyCli& o,
                            const std::vector<models::vlm::ProcessedImage>& images, std::mt19937_64& rng) {
  FK_CHECK(bench::kernel_trace_available(), "bench latency: --kernel-profile needs a CUDA build with CUPTI and a GPU");
  bench::kernel_trace_start();
  bench::kernel_trace_collect();  // drop what ran before
  const BatchRun r = run_batch(e, o, images, rng, true);
  const std::vector<bench::KernelRecord> records = bench::kernel_trace_collect();
  bench::kernel_trace_stop();
  json j;
  j["prefill"] = bench::kernel_profile_json(bench::profile_kernels(records, r.trace_start_ns, r.trace_first_ns), 1,
                                            o.kernel_profile);
  if (r.steps_after_first > 0)
    j["decode_step"] =
        bench::kernel_profile_json(bench::profile_kernels(records, r.trace_first_ns, r.trace_end_ns),
                                   static_cast<double>(r.steps_after_first), o.kernel_profile);
  j["decode_steps"] = r.steps_after_first;
  j["note"] = "one extra batch with CUPTI's kernel trace on; microseconds and launches per decode step";
  return j;
}

void run_latency(const LatencyCli& o) {
  FK_CHECK(o.batch_size > 0 && o.input_len > 0 && o.output_len > 0 && o.iters > 0 && o.warmup >= 0,
           "bench latency: batch size, lengths and iterations must be positive");
  engine::Engine e(bench_engine_config(o.engine, "fk bench latency"));
  FK_CHECK(o.kernel_profile == 0 || e.config().backend == DeviceType::cuda,
           "bench latency: --kernel-profile traces CUDA kernels; the engine runs on the CPU");
  FK_CHECK(o.image_size >= 0, "bench latency: --image-size must not be negative, got ", o.image_size);
  const std::vector<models::vlm::ProcessedImage> images = bench_images(e, o);
  std::mt19937_64 rng(o.engine.seed + 1);
  std::vector<double> total, prefill, step;
  StatusLine status;
  for (int64_t it = 0; it < o.warmup + o.iters; ++it) {
    status.show(it < o.warmup ? concat("[fk] bench latency: warm-up ", it + 1, "/", o.warmup)
                              : concat("[fk] bench latency: run ", it - o.warmup + 1, "/", o.iters));
    const BatchRun r = run_batch(e, o, images, rng, false);
    if (it < o.warmup) continue;
    total.push_back(r.total_s);
    prefill.push_back(r.prefill_s);
    if (r.step_s >= 0) step.push_back(r.step_s);
  }
  status.clear();
  json j = environment(e, o.engine);
  j["bench"] = "latency";
  j["batch_size"] = o.batch_size;
  j["input_len"] = o.input_len;
  j["output_len"] = o.output_len;
  if (!images.empty()) {
    j["image_size"] = o.image_size;
    j["image_patches"] = images[0].pixel_values.size(0);
    j["image_tokens"] = images[0].tokens;  // each prompt: image tokens + 2 markers + input_len
  }
  j["iters"] = o.iters;
  j["median_latency_s"] = median(total);
  j["median_prefill_s"] = median(prefill);
  int64_t prompt_len = o.input_len;
  for (const auto& im : images) prompt_len += im.tokens + 2;  // the placeholders and their markers
  j["prefill_tokens_per_s"] = static_cast<double>(o.batch_size * prompt_len) / median(prefill);
  if (!step.empty()) {
    j["median_decode_step_ms"] = 1e3 * median(step);
    j["decode_tokens_per_s"] = static_cast<double>(o.batch_size) / median(step);
  }
  j["latencies_s"] = total;
  j["graph_replays"] = e.stats().graph_replays;
  j["step_profile"] = step_profile(e.stats());  // warm-up iterations included
  if (o.kernel_profile > 0) j["kernel_profile"] = latency_kernel_profile(e, o, images, rng);
  emit(j, o.out);
}

struct ThroughputCli {
  EngineOptions engine;
  int64_t num_prompts = 1000, input_len = 0, output_len = 0;
  std::string input_range = "128:1024", output_range = "128:1024";
  std::string out;
};

std::pair<int64_t, int64_t> parse_range(const std::string& s, const char* what) {
  const auto colon = s.find(':');
  FK_CHECK(colon != std::string::npos, what, " must be LO:HI, got '", s, "'");
  const int64_t lo = std::stoll(s.substr(0, colon)), hi = std::stoll(s.substr(colon + 1));
  FK_CHECK(lo > 0 && hi >= lo, what, " must satisfy 0 < LO <= HI, got '", s, "'");
  return {lo, hi};
}

void run_throughput(const ThroughputCli& o) {
  FK_CHECK(o.num_prompts > 0, "bench throughput: --num-prompts must be positive");
  engine::Engine e(bench_engine_config(o.engine, "fk bench throughput"));
  const int64_t V = e.spec().config.vocab_size;
  std::mt19937_64 rng(o.engine.seed + 7);
  const auto in_r = o.input_len > 0 ? std::pair{o.input_len, o.input_len} : parse_range(o.input_range, "--input-range");
  const auto out_r =
      o.output_len > 0 ? std::pair{o.output_len, o.output_len} : parse_range(o.output_range, "--output-range");
  std::uniform_int_distribution<int64_t> in_len(in_r.first, in_r.second), out_len(out_r.first, out_r.second);
  int64_t prompt_tokens = 0, expected_out = 0;
  std::vector<std::pair<std::vector<int64_t>, int64_t>> reqs;
  for (int64_t i = 0; i < o.num_prompts; ++i) {
    const int64_t n = std::min(in_len(rng), e.max_model_len() - 1);
    const int64_t m = std::min(out_len(rng), e.max_model_len() - n);
    reqs.push_back({random_prompt(rng, n, V), m});
    prompt_tokens += n;
    expected_out += m;
  }
  const double t0 = e.now_s();
  for (auto& [prompt, m] : reqs) {
    engine::SamplingParams p;
    p.temperature = 0;
    p.max_tokens = m;
    p.ignore_eos = true;
    e.add_request(std::move(prompt), p);
  }
  int64_t out_tokens = 0, done = 0;
  {
    StatusLine status;  // erased before the summary prints
    while (e.has_unfinished()) {
      for (const auto& r : e.step()) {
        out_tokens += static_cast<int64_t>(r.output_tokens.size());
        ++done;
      }
      status.show(concat("[fk] bench throughput: ", done, "/", o.num_prompts, " requests done"));
    }
  }
  const double elapsed = e.now_s() - t0;
  FK_CHECK(out_tokens == expected_out, "bench throughput: ", out_tokens, " output tokens, expected ", expected_out);
  json j = environment(e, o.engine);
  j["bench"] = "throughput";
  j["num_prompts"] = o.num_prompts;
  j["input_range"] = {in_r.first, in_r.second};
  j["output_range"] = {out_r.first, out_r.second};
  j["prompt_tokens"] = prompt_tokens;
  j["output_tokens"] = out_tokens;
  j["elapsed_s"] = elapsed;
  j["requests_per_s"] = static_cast<double>(done) / elapsed;
  j["output_tokens_per_s"] = static_cast<double>(out_tokens) / elapsed;
  j["total_tokens_per_s"] = static_cast<double>(out_tokens + prompt_tokens) / elapsed;
  const engine::EngineStats s = e.stats();
  j["steps"] = s.steps;
  j["preemptions"] = s.preemptions;
  j["graph_replays"] = s.graph_replays;
  j["step_profile"] = step_profile(s);
  emit(j, o.out);
}

struct ServeBenchCli {
  serve::ServingBenchConfig config;
  int64_t num_prompts = 200, vocab = 32000;
  std::string input_range = "128:1024", output_range = "128:1024";
  std::string dataset_name = "random", dataset_path, tokenizer;
  serve::ShareGptOptions sharegpt;
  std::string out;
};

// The tokenizer of ShareGPT prompts: --tokenizer, else the --model folder's tokenizer.json.
tokenizer::Tokenizer bench_tokenizer(const ServeBenchCli& o) {
  namespace fs = std::filesystem;
  std::string path = o.tokenizer;
  if (path.empty() && !o.config.model.empty() && fs::exists(fs::path(o.config.model) / "tokenizer.json"))
    path = o.config.model;
  FK_CHECK(!path.empty(), "bench serve: the sharegpt dataset needs the model's tokenizer: pass --tokenizer "
                          "(tokenizer.json or its folder), or --model naming the model's folder");
  return tokenizer::Tokenizer::from_file(path);
}

void run_serve_bench(const ServeBenchCli& o) {
  FK_CHECK(o.dataset_name == "random" || o.dataset_name == "sharegpt", "bench serve: --dataset-name must be random or "
           "sharegpt, got '", o.dataset_name, "'");
  std::vector<serve::BenchRequest> reqs;
  json dataset;
  if (o.dataset_name == "sharegpt") {
    FK_CHECK(!o.dataset_path.empty(), "bench serve: --dataset-name sharegpt needs --dataset-path FILE");
    serve::ShareGptOptions so = o.sharegpt;
    so.path = o.dataset_path;
    so.num_prompts = o.num_prompts;
    so.seed = o.config.seed;
    serve::ShareGptSample sample = serve::sample_sharegpt(so, bench_tokenizer(o));
    reqs = std::move(sample.requests);
    dataset = {{"name", "sharegpt"}, {"path", o.dataset_path}, {"conversations", sample.conversations},
               {"unique_prompts", sample.unique_prompts}};
  } else {
    const auto in_r = parse_range(o.input_range, "--input-range");
    const auto out_r = parse_range(o.output_range, "--output-range");
    reqs = serve::random_requests(o.num_prompts, in_r.first, in_r.second, out_r.first, out_r.second, o.vocab,
                                  o.config.seed + 11);
    dataset = {{"name", "random"},
               {"input_range", {in_r.first, in_r.second}},
               {"output_range", {out_r.first, out_r.second}}};
  }
  double duration = 0;
  const auto outcomes = serve::run_serving_bench(o.config, reqs, &duration);
  json j = serve::summarize(outcomes, duration);
  j["bench"] = "serve";
  j["command"] = invoked_command();
  j["timestamp"] = bench::utc_timestamp();
  j["server"] = concat(o.config.host, ":", o.config.port);
  j["num_prompts"] = o.num_prompts;
  j["request_rate"] = o.config.request_rate > 0 ? json(o.config.request_rate) : json("inf");
  j["max_concurrency"] = o.config.max_concurrency;
  j["dataset"] = dataset;
  if (dataset.contains("input_range")) {
    j["input_range"] = dataset["input_range"];
    j["output_range"] = dataset["output_range"];
  }
  emit(j, o.out);
  FK_CHECK(j["failed"] == 0, "bench serve: ", j["failed"].get<int64_t>(), " requests failed");
}

void setup(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "The engine end to end: latency of a batch, throughput of many requests");
  bench->require_subcommand(1);

  static LatencyCli l;
  auto* lat = bench->add_subcommand("latency", "Prefill and per-step decode time of one batch (median of runs)");
  l.engine.add_to(lat);
  lat->get_option("--model")->description(kModelHelp);
  lat->add_option("--batch-size", l.batch_size)->capture_default_str();
  lat->add_option("--input-len", l.input_len)->capture_default_str();
  lat->add_option("--output-len", l.output_len)->capture_default_str();
  lat->add_option("--image-size", l.image_size,
                  "Models that read images (Qwen3-VL): a random image of this many pixels square before each "
                  "prompt's text (0: none)")
      ->capture_default_str();
  lat->add_option("--warmup,--num-iters-warmup", l.warmup, "Runs not counted")->capture_default_str();
  lat->add_option("--iters,--num-iters", l.iters, "Runs counted (median)")->capture_default_str();
  lat->add_option("--kernel-profile", l.kernel_profile,
                  "After the timed runs, one more with a kernel trace: the N kernels that took the most device "
                  "time in the prefill and per decode step (CUDA)");
  lat->add_flag("--json", g_json_stdout, "Print the JSON result instead of the summary");
  lat->add_option("--json-out,--output-json", l.out, "Also write the JSON result to this file");
  lat->callback([] { run_latency(l); });

  static ThroughputCli t;
  auto* thr = bench->add_subcommand("throughput", "N random requests at once, ignore-eos, run to completion");
  t.engine.add_to(thr);
  thr->get_option("--model")->description(kModelHelp);
  thr->add_option("--num-prompts", t.num_prompts)->capture_default_str();
  thr->add_option("--input-len", t.input_len, "Fixed prompt length (overrides --input-range)");
  thr->add_option("--output-len", t.output_len, "Fixed output length (overrides --output-range)");
  thr->add_option("--input-range", t.input_range, "Prompt lengths uniform in LO:HI")->capture_default_str();
  thr->add_option("--output-range", t.output_range, "Output lengths uniform in LO:HI")->capture_default_str();
  thr->add_flag("--json", g_json_stdout, "Print the JSON result instead of the summary");
  thr->add_option("--json-out,--output-json", t.out, "Also write the JSON result to this file");
  thr->callback([] { run_throughput(t); });

  static ServeBenchCli sv;
  auto* srv = bench->add_subcommand("serve", "Replay random or ShareGPT requests against an OpenAI-compatible server "
                                             "(streamed)");
  srv->add_option("--host", sv.config.host)->capture_default_str();
  srv->add_option("--port", sv.config.port)->capture_default_str();
  srv->add_option("--model", sv.config.model, "Model name sent with each request (default: none)");
  srv->add_option("--num-prompts", sv.num_prompts)->capture_default_str();
  srv->add_option("--input-range", sv.input_range, "Prompt lengths uniform in LO:HI")->capture_default_str();
  srv->add_option("--output-range", sv.output_range, "Output lengths uniform in LO:HI")->capture_default_str();
  srv->add_option("--vocab", sv.vocab, "Prompt token ids are drawn from [0, vocab)")->capture_default_str();
  srv->add_option("--dataset-name", sv.dataset_name, "random | sharegpt")->capture_default_str();
  srv->add_option("--dataset-path", sv.dataset_path, "ShareGPT JSON file (list of {id, conversations})");
  srv->add_option("--tokenizer", sv.tokenizer, "tokenizer.json or its folder for ShareGPT (default: --model's folder)");
  srv->add_option("--sharegpt-output-len", sv.sharegpt.output_len, "Output length of every request (0: the answer's)")
      ->capture_default_str();
  srv->add_option("--sharegpt-max-prompt-len", sv.sharegpt.max_prompt_len, "Longer prompts are skipped")
      ->capture_default_str();
  srv->add_option("--sharegpt-max-total-len", sv.sharegpt.max_total_len, "Longer prompt + output are skipped")
      ->capture_default_str();
  srv->add_option("--request-rate", sv.config.request_rate, "Poisson arrivals per second (0: all at once)");
  srv->add_option("--max-concurrency", sv.config.max_concurrency, "Requests in flight at most (0: no cap)");
  srv->add_option("--seed", sv.config.seed)->capture_default_str();
  srv->add_flag("--json", g_json_stdout, "Print the JSON result instead of the summary");
  srv->add_option("--json-out,--output-json", sv.out, "Also write the JSON result to this file");
  srv->callback([] { run_serve_bench(sv); });

  add_bench_embed(bench);
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
