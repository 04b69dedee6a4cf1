// `fk serve`: an OpenAI-compatible server for a model: a generating model through the engine
// (src/serving/http/http_server.h), a model of the Batch pattern through its endpoints
// (src/serving/http/batch_server.h): a text encoder's (BGE-M3, ColBERTv2) /v1/embeddings and
// /v1/score, an image classifier's (MobileNetV4, ConvNeXt V2) /v1/classify, a detector's (YOLOv10)
// /v1/detect.
//
// SIGTERM / SIGINT shut down gracefully: the server stops accepting, requests in flight
// may finish for --shutdown-timeout seconds, then the rest are aborted (their clients get
// an error saying the server is shutting down). A second signal exits at once.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <thread>

#include <filesystem>

#include "cli/command.h"
#include "cli/engine_options.h"
#include "cli/model_lookup.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "models/encoder/xlm_roberta_model.h"
#include "models/registry.h"
#include "models/vision/image_classifier.h"
#include "models/vision/yolov10/yolov10_model.h"
#include "serving/embed/encoder_service.h"
#include "serving/http/batch_server.h"
#include "serving/http/http_server.h"
#include "serving/vision/vision_service.h"

namespace fk::cli {
namespace {

struct ServeCli {
  EngineOptions engine;
  serve::ServerConfig server;
  double shutdown_timeout_s = 30;
};

sigset_t shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

// Waits for SIGTERM / SIGINT on its own thread (the signals are blocked in every other
// thread, so none of them is interrupted) and drives the shutdown; polls `served` to end.
template <class Server>
void watch_signals(Server& server, double timeout_s, const std::atomic<bool>& served) {
  using Clock = std::chrono::steady_clock;
  const sigset_t set = shutdown_signals();
  const timespec poll{0, 50'000'000};
  bool draining = false, aborted = false;
  Clock::time_point deadline;
  while (!served.load()) {
    const int sig = sigtimedwait(&set, nullptr, &poll);
    if (sig > 0 && draining) {
      std::fprintf(stderr, "shutdown: second signal (%d), exiting now\n", sig);
      std::fflush(stderr);
      std::_Exit(128 + sig);
    }
    if (sig > 0) {
      draining = true;
      deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
      server.stop_accepting();
      const int64_t n = server.in_flight();
      std::fprintf(stderr, "shutdown: signal %d, no new requests; waiting up to %g s for %lld in flight (a second "
                   "signal exits at once)\n", sig, timeout_s, static_cast<long long>(n));
      std::fflush(stderr);
    }
    if (draining && !aborted && server.in_flight() > 0 && Clock::now() >= deadline) {
      aborted = true;
      const int64_t n = server.abort_in_flight();
      std::fprintf(stderr, "shutdown: aborted %lld requests after %g s\n", static_cast<long long>(n), timeout_s);
      std::fflush(stderr);
    }
  }
}

template <class Server>
void serve_until_signalled(Server& server, const ServeCli& o, const char* routes) {
  const int port = server.bind();
  std::printf("fk serve: %s on http://%s:%d (%s)\n", o.engine.model.c_str(), o.server.host.c_str(), port, routes);
  std::fflush(stdout);
  std::atomic<bool> served{false};
  std::thread watcher([&] { watch_signals(server, o.shutdown_timeout_s, served); });
  server.serve();
  served = true;
  watcher.join();
}

// The registered Batch-pattern model behind --model, if it is one (a generating model, or a
// name only the engine knows, goes to the engine).
std::optional<models::ModelSource> batch_model(const std::string& model) {
  try {
    models::ModelSource src = models::resolve_model(model);
    if (src.registration != nullptr && src.registration->pattern == models::RunPattern::batch) return src;
  } catch (const Error&) {
  }
  return std::nullopt;
}

// The Batch-pattern model behind --model as fk serve's service: a text encoder loaded for
// requests of up to --max-num-batched-tokens tokens (at least its longest sequence) and
// --max-num-seqs texts per forward pass, its tokenizer from --tokenizer or the checkpoint
// folder's tokenizer.json; an image classifier or detector loaded for --max-num-seqs images
// per forward pass.
serve::BatchService batch_service(const ServeCli& o, const models::ModelSource& src) {
  std::string device = o.engine.device;
  if (device == "auto") device = rt::cuda_available() ? "cuda" : "cpu";
  const models::ModelSource checked = lookup_model(o.engine.model, models::RunPattern::batch, device, "fk serve");
  FK_CHECK(o.engine.dtype == "bf16" || o.engine.dtype == "f16", "fk serve: a Batch-pattern model runs in bf16 or f16, ",
           "got --dtype ", o.engine.dtype);
  std::unique_ptr<models::Model> m = models::create_model_from_config(checked.config_json, checked.source);
  models::LoadOptions lo;
  lo.device = device == "cuda" ? Device::cuda() : Device::cpu();
  lo.dtype = o.engine.dtype == "f16" ? DType::f16 : DType::bf16;
  lo.checkpoint = checked.checkpoint;
  lo.seed = o.engine.seed;
  lo.max_seqs = std::max<int64_t>(o.engine.max_num_seqs, 1);
  const std::string name = o.server.served_model_name.empty() ? o.engine.model : o.server.served_model_name;
  if (dynamic_cast<models::vision::ImageClassifier*>(m.get()) != nullptr ||
      dynamic_cast<models::vision::Yolov10Model*>(m.get()) != nullptr) {
    m->load(lo);
    return serve::vision_batch_service(
        std::make_shared<serve::VisionService>(std::move(m), lo.max_seqs, name, o.server.allowed_local_media_path));
  }
  FK_CHECK(dynamic_cast<models::encoder::XlmRobertaModel*>(m.get()) != nullptr, "fk serve: model '", o.engine.model,
           "' (architecture '", src.registration->architecture, "') runs by the batch pattern but is not a model this ",
           "server serves (text encoders, image classifiers, detectors)");
  const auto& config = dynamic_cast<models::encoder::XlmRobertaModel&>(*m).config();
  lo.max_tokens = std::max<int64_t>(o.engine.max_num_batched_tokens, config.max_tokens_per_sequence());
  m->load(lo);
  std::filesystem::path tok_path = o.server.tokenizer;
  if (tok_path.empty() && !checked.checkpoint.empty() && std::filesystem::exists(checked.checkpoint / "tokenizer.json"))
    tok_path = checked.checkpoint;
  std::unique_ptr<tokenizer::Tokenizer> tok;
  if (!tok_path.empty()) tok = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_file(tok_path));
  return serve::encoder_batch_service(std::make_shared<serve::EncoderService>(std::move(m), std::move(tok), name));
}

void run(ServeCli o) {
  FK_CHECK(o.shutdown_timeout_s >= 0, "--shutdown-timeout must be >= 0 seconds, got ", o.shutdown_timeout_s);
  // Blocked before any thread starts, so every thread inherits the mask and only the
  // watcher below receives them.
  const sigset_t set = shutdown_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  if (const auto src = batch_model(o.engine.model)) {
    serve::BatchService service = batch_service(o, *src);
    o.server.served_model_name = service.served_model;
    std::string routes = "POST";
    for (const serve::BatchEndpoint& e : service.endpoints) routes += " " + e.path;
    routes += ", GET /v1/models /health /metrics";
    serve::BatchServer server(o.server, std::move(service));
    serve_until_signalled(server, o, routes.c_str());
    return;
  }
  auto e = std::make_unique<engine::Engine>(o.engine.to_config());
  serve::HttpServer server(o.server, std::move(e));
  serve_until_signalled(server, o, "POST /v1/completions, GET /v1/models /health /metrics");
}

void setup(CLI::App& app) {
  static ServeCli o;
  auto* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server for a model (a text encoder: "
                                          "/v1/embeddings and /v1/score; an image classifier: /v1/classify; a "
                                          "detector: /v1/detect)");
  cmd->add_option("model", o.engine.model, "Built-in config name or HF checkpoint folder (as --model)");
  o.engine.add_to(cmd);
  cmd->add_option("--host", o.server.host)->capture_default_str();
  cmd->add_option("--port", o.server.port, "0: any free port")->capture_default_str();
  cmd->add_option("--tokenizer", o.server.tokenizer, "tokenizer.json or its folder (default: the model folder's)");
  cmd->add_option("--served-model-name", o.server.served_model_name, "Name clients use (default: the model)");
  cmd->add_option("--allowed-local-media-path", o.server.allowed_local_media_path,
                  "Folder whose image files chat requests may name (file:// URLs, absolute paths); default: none, "
                  "images come as data URLs");
  cmd->add_option("--max-pending", o.server.max_pending, "Requests in the server at once; more get HTTP 503")
      ->capture_default_str();
  cmd->add_option("--shutdown-timeout", o.shutdown_timeout_s,
                  "Seconds requests in flight may finish after SIGTERM/SIGINT before they are aborted "
                  "(a second signal exits at once)")
      ->capture_default_str();
  cmd->callback([] { run(o); });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
