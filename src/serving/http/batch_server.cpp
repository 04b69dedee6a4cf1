#include "serving/http/batch_server.h"

#include <atomic>
#include <chrono>
#include <ctime>

#include "fk/status.h"
#include "serving/http/metrics.h"
#include "serving/http/openai_api.h"
#include "serving/http/server_setup.h"

namespace fk::serve {

using nlohmann::json;

struct BatchServer::Impl {
  ServerConfig config;
  BatchService service;
  ServerMetrics metrics;
  httplib::Server http;
  std::atomic<int64_t> in_flight{0}, finished{0}, tokens{0};
  std::atomic<bool> shutting_down{false};
  int bound_port = -1;
  const int64_t created = static_cast<int64_t>(std::time(nullptr));

  Impl(ServerConfig c, BatchService s) : config(std::move(c)), service(std::move(s)) {
    const int64_t threads = config.threads > 0 ? config.threads : 64;
    http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    routes();
  }

  // Runs one endpoint: counts it in flight, refuses it during a shutdown, maps errors.
  template <class Fn>
  void handle(httplib::Response& res, Fn&& compute) {
    const auto start = std::chrono::steady_clock::now();
    ++in_flight;
    try {
      if (shutting_down.load()) throw ApiError(503, "server_error", kShuttingDown);
      const json out = compute();
      if (shutting_down.load()) throw ApiError(503, "server_error", kShuttingDown);
      res.set_content(json_text(out), "application/json");
      metrics.count_http(200);
      if (out.contains("usage") && out["usage"].contains("prompt_tokens"))
        tokens += out["usage"]["prompt_tokens"].get<int64_t>();
      metrics.observe_request(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), -1, 0);
    } catch (const ApiError& e) {
      send_error(res, e);
      metrics.count_http(e.status);
    } catch (const Error& e) {
      // The model's own checks of a client's input (e.g. a batch it cannot hold).
      send_error(res, ApiError(400, "invalid_request_error", e.what()));
      metrics.count_http(400);
    }
    ++finished;
    --in_flight;
  }

  json model_json() const {
    return {{"id", config.served_model_name}, {"object", "model"}, {"created", created},
            {"owned_by", "fastkernels"},      {"parent", nullptr}, {"task", service.task}};
  }

  void routes() {
    for (const BatchEndpoint& e : service.endpoints)
      http.Post(e.path, [this, &e](const httplib::Request& q, httplib::Response& r) {
        handle(r, [&] { return e.handle(q.body); });
      });
    http.Get("/health", [](const httplib::Request&, httplib::Response& r) { r.set_content("ok\n", "text/plain"); });
    add_model_routes(
        http, config.served_model_name, [this] { return model_json(); },
        [this](int status) { metrics.count_http(status); });
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& r) {
      LoopStats s;
      s.running = in_flight.load();
      s.requests_finished = finished.load();
      s.prompt_tokens = tokens.load();
      r.set_content(metrics.render(s, config.served_model_name), "text/plain; version=0.0.4");
    });
    apply_server_settings(http, config.max_body_bytes, [this](int status) { metrics.count_http(status); });
  }
};

BatchServer::BatchServer(ServerConfig config, BatchService service)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(service))) {
  FK_CHECK(!impl_->config.served_model_name.empty(), "serve: the batch server needs a served model name");
}

BatchServer::~BatchServer() { stop(); }

int BatchServer::bind() {
  impl_->bound_port = bind_server(impl_->http, impl_->config.host, impl_->config.port);
  return impl_->bound_port;
}

void BatchServer::serve() { impl_->http.listen_after_bind(); }
void BatchServer::stop() { impl_->http.stop(); }

void BatchServer::stop_accepting() {
  impl_->shutting_down = true;
  impl_->http.stop();
}

int64_t BatchServer::in_flight() const { return impl_->in_flight.load(); }

// A forward pass cannot be cut short: the requests waiting for the model are answered 503
// when their turn comes (handle checks the flag), the one running finishes.
int64_t BatchServer::abort_in_flight() {
  impl_->shutting_down = true;
  return impl_->in_flight.load();
}

int BatchServer::port() const { return impl_->bound_port; }

}  // namespace fk::serve
