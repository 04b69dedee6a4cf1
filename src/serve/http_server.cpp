#include "serve/http_server.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <ctime>

#include "fk/status.h"
#include "serve/engine_loop.h"
#include "serve/metrics.h"
#include "serve/openai_api.h"

namespace fk::serve {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One (prompt, sample) pair of a completion request.
struct Choice {
  int64_t index = 0;
  std::string id;
  int64_t prompt_tokens = 0;
  std::shared_ptr<TokenStream> stream;
  std::vector<int64_t> tokens;
  double first_token_s = -1;
};

}  // namespace

struct HttpServer::Impl {
  ServerConfig config;
  EngineLoop loop;
  ServerMetrics metrics;
  httplib::Server http;
  std::atomic<int64_t> next_id{0};
  int bound_port = -1;

  Impl(ServerConfig c, std::unique_ptr<engine::Engine> e) : config(std::move(c)), loop(std::move(e)) {
    http.new_task_queue = [n = config.threads] { return new httplib::ThreadPool(static_cast<size_t>(n)); };
    routes();
  }

  void send_error(httplib::Response& res, const ApiError& e) {
    res.status = e.status;
    res.set_content(error_body(e).dump(), "application/json");
  }

  // Submits every choice; on a refused one, aborts those already submitted.
  std::vector<Choice> submit_all(const CompletionRequest& cr, const std::string& id) {
    const LoopStats s = loop.stats();
    const int64_t wanted = static_cast<int64_t>(cr.prompts.size()) * cr.n;
    if (s.running + s.queued + wanted > config.max_pending)
      throw ApiError(503, "server_error",
                     concat("the server is overloaded (", s.running + s.queued, " requests in flight, at most ",
                            config.max_pending, "); retry later"));
    std::vector<Choice> choices;
    try {
      for (size_t p = 0; p < cr.prompts.size(); ++p)
        for (int64_t j = 0; j < cr.n; ++j) {
          Choice c;
          c.index = static_cast<int64_t>(p) * cr.n + j;
          c.id = concat(id, "-", c.index);
          c.prompt_tokens = static_cast<int64_t>(cr.prompts[p].size());
          engine::SamplingParams sp = cr.params;
          if (sp.seed) sp.seed = *sp.seed + static_cast<uint64_t>(j);  // n samples of one seed differ
          c.stream = loop.submit(c.id, cr.prompts[p], sp);
          choices.push_back(std::move(c));
        }
    } catch (const Error& e) {
      for (const Choice& c : choices) loop.abort(c.id);
      throw ApiError(400, "invalid_request_error", e.what(), "prompt");
    }
    return choices;
  }

  void observe(const Choice& c, Clock::time_point t0) {
    const double end = seconds_since(t0);
    metrics.e2e.observe(end);
    if (c.first_token_s >= 0) {
      metrics.ttft.observe(c.first_token_s);
      if (c.tokens.size() > 1) metrics.tpot.observe((end - c.first_token_s) / static_cast<double>(c.tokens.size() - 1));
    }
  }

  // Waits for the next tokens of a choice; false when it has finished.
  bool next(Choice& c, std::vector<int64_t>& fresh, Clock::time_point t0) {
    fresh.clear();
    const bool more = c.stream->wait_next(fresh);
    if (!fresh.empty() && c.first_token_s < 0) c.first_token_s = seconds_since(t0);
    c.tokens.insert(c.tokens.end(), fresh.begin(), fresh.end());
    return more;
  }

  void completions(const httplib::Request& req, httplib::Response& res) {
    const Clock::time_point t0 = Clock::now();
    try {
      const CompletionRequest cr = parse_completion_request(req.body, config.served_model_name);
      const std::string id = concat("cmpl-", next_id++);
      const int64_t created = static_cast<int64_t>(std::time(nullptr));
      auto choices = std::make_shared<std::vector<Choice>>(submit_all(cr, id));
      if (!cr.stream) {
        std::vector<ChoiceResult> results;
        int64_t prompt_tokens = 0;
        std::vector<int64_t> fresh;
        for (Choice& c : *choices) {
          while (next(c, fresh, t0)) {
          }
          if (!c.stream->error().empty()) throw ApiError(500, "server_error", c.stream->error());
          observe(c, t0);
          results.push_back({c.index, c.tokens, c.stream->finish_reason()});
          prompt_tokens += c.prompt_tokens;
        }
        res.set_content(completion_response(id, config.served_model_name, created, results, prompt_tokens).dump(),
                         "application/json");
        metrics.count_http(200);
        return;
      }
      const bool usage = cr.include_usage;
      res.set_chunked_content_provider("text/event-stream", [this, choices, id, created, usage, t0](
                                                               size_t, httplib::DataSink& sink) {
        auto send = [&](const json& j) {
          const std::string event = "data: " + j.dump() + "\n\n";
          return sink.write(event.data(), event.size());
        };
        std::vector<int64_t> fresh;
        int64_t prompt_tokens = 0, completion_tokens = 0;
        for (Choice& c : *choices) {
          bool more = true;
          while (more) {
            more = next(c, fresh, t0);
            const engine::FinishReason fin = more ? engine::FinishReason::none : c.stream->finish_reason();
            if (fresh.empty() && more) continue;
            if (!send(completion_chunk(id, config.served_model_name, created, c.index, fresh, fin))) {
              // The client went away: free its requests (and their KV blocks) now.
              for (const Choice& other : *choices) loop.abort(other.id);
              return false;
            }
          }
          observe(c, t0);
          prompt_tokens += c.prompt_tokens;
          completion_tokens += static_cast<int64_t>(c.tokens.size());
        }
        if (usage)
          send({{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", config.served_model_name},
                {"choices", json::array()},
                {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens},
                           {"total_tokens", prompt_tokens + completion_tokens}}}});
        const std::string done = "data: [DONE]\n\n";
        sink.write(done.data(), done.size());
        sink.done();
        return true;
      });
      metrics.count_http(200);
    } catch (const ApiError& e) {
      send_error(res, e);
      metrics.count_http(e.status);
    } catch (const std::exception& e) {
      send_error(res, ApiError(500, "server_error", e.what()));
      metrics.count_http(500);
    }
  }

  void routes() {
    http.Post("/v1/completions", [this](const httplib::Request& q, httplib::Response& r) { completions(q, r); });
    http.Get("/health", [](const httplib::Request&, httplib::Response& r) { r.set_content("ok\n", "text/plain"); });
    http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& r) {
      const json model = {{"id", config.served_model_name},
                          {"object", "model"},
                          {"created", static_cast<int64_t>(std::time(nullptr))},
                          {"owned_by", "fastkernels"},
                          {"max_model_len", loop.engine().max_model_len()}};
      r.set_content(json{{"object", "list"}, {"data", json::array({model})}}.dump(), "application/json");
    });
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& r) {
      r.set_content(metrics.render(loop.stats()), "text/plain; version=0.0.4");
    });
    for (const char* path : {"/v1/chat/completions", "/tokenize", "/detokenize"})
      http.Post(path, [this, path](const httplib::Request&, httplib::Response& r) {
        send_error(r, ApiError(501, "not_implemented_error",
                               concat(path, " needs the model's tokenizer and chat template, which this server does "
                                            "not load yet; use /v1/completions with token ids")));
        metrics.count_http(501);
      });
    // Unknown routes and oversized bodies get OpenAI-style bodies too.
    http.set_error_handler([](const httplib::Request& q, httplib::Response& r) {
      if (!r.body.empty()) return;
      const ApiError e(r.status, r.status == 404 ? "not_found_error" : "invalid_request_error",
                       concat("no route for ", q.method, " ", q.path));
      r.set_content(error_body(e).dump(), "application/json");
    });
    http.set_payload_max_length(64 << 20);
  }
};

HttpServer::HttpServer(ServerConfig config, std::unique_ptr<engine::Engine> engine)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(engine))) {
  if (impl_->config.served_model_name.empty()) impl_->config.served_model_name = impl_->loop.engine().config().model;
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  Impl& s = *impl_;
  s.bound_port = s.config.port == 0 ? s.http.bind_to_any_port(s.config.host)
                                    : (s.http.bind_to_port(s.config.host, s.config.port) ? s.config.port : -1);
  FK_CHECK(s.bound_port > 0, "fk serve: cannot listen on ", s.config.host, ":", s.config.port);
  return s.bound_port;
}

void HttpServer::serve() { impl_->http.listen_after_bind(); }
void HttpServer::stop() { impl_->http.stop(); }
int HttpServer::port() const { return impl_->bound_port; }

}  // namespace fk::serve
