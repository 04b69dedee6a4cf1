// `fk serve`: an OpenAI-compatible server for a model (src/serving/http/http_server.h).
#include <csignal>
#include <cstdio>

#include "cli/command.h"
#include "cli/engine_options.h"
#include "serving/http/http_server.h"

namespace fk::cli {
namespace {

struct ServeCli {
  EngineOptions engine;
  serve::ServerConfig server;
};

serve::HttpServer* g_server = nullptr;

void on_signal(int) {
  if (g_server) g_server->stop();
}

void run(ServeCli o) {
  auto e = std::make_unique<engine::Engine>(o.engine.to_config());
  serve::HttpServer server(o.server, std::move(e));
  const int port = server.bind();
  std::printf("fk serve: %s on http://%s:%d (POST /v1/completions, GET /v1/models /health /metrics)\n",
              o.engine.model.c_str(), o.server.host.c_str(), port);
  g_server = &server;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  server.serve();
  g_server = nullptr;
}

void setup(CLI::App& app) {
  static ServeCli o;
  auto* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server for a model");
  cmd->add_option("model", o.engine.model, "Built-in config name or HF checkpoint folder (as --model)");
  o.engine.add_to(cmd);
  cmd->add_option("--host", o.server.host)->capture_default_str();
  cmd->add_option("--port", o.server.port, "0: any free port")->capture_default_str();
  cmd->add_option("--served-model-name", o.server.served_model_name, "Name clients use (default: the model)");
  cmd->add_option("--max-pending", o.server.max_pending, "Requests in the server at once; more get HTTP 503")
      ->capture_default_str();
  cmd->callback([] { run(o); });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
