// `fk serve`: an OpenAI-compatible server for a model (src/serving/http/http_server.h).
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
#include <thread>

#include "cli/command.h"
#include "cli/engine_options.h"
#include "fk/status.h"
#include "serving/http/http_server.h"

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
void watch_signals(serve::HttpServer& server, double timeout_s, const std::atomic<bool>& served) {
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

void run(ServeCli o) {
  FK_CHECK(o.shutdown_timeout_s >= 0, "--shutdown-timeout must be >= 0 seconds, got ", o.shutdown_timeout_s);
  // Blocked before any thread starts, so every thread inherits the mask and only the
  // watcher below receives them.
  const sigset_t set = shutdown_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  auto e = std::make_unique<engine::Engine>(o.engine.to_config());
  serve::HttpServer server(o.server, std::move(e));
  const int port = server.bind();
  std::printf("fk serve: %s on http://%s:%d (POST /v1/completions, GET /v1/models /health /metrics)\n",
              o.engine.model.c_str(), o.server.host.c_str(), port);
  std::fflush(stdout);
  std::atomic<bool> served{false};
  std::thread watcher([&] { watch_signals(server, o.shutdown_timeout_s, served); });
  server.serve();
  served = true;
  watcher.join();
}

void setup(CLI::App& app) {
  static ServeCli o;
  auto* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server for a model");
  cmd->add_option("model", o.engine.model, "Built-in config name or HF checkpoint folder (as --model)");
  o.engine.add_to(cmd);
  cmd->add_option("--host", o.server.host)->capture_default_str();
  cmd->add_option("--port", o.server.port, "0: any free port")->capture_default_str();
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
