#include "serving/http/http_server.h"

#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "fk/status.h"
#include "serving/http/choice_stream.h"
#include "serving/http/connection_watch.h"
#include "serving/http/engine_loop.h"
#include "serving/http/logprobs_json.h"
#include "serving/http/metrics.h"
#include "serving/http/openai_api.h"
#include "serving/http/sampling_fields.h"
#include "serving/http/server_setup.h"

namespace fk::serve {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

using Choice = ChoiceStream;

// How often a request's HTTP thread, while it waits for tokens, checks that its client is
// still connected (connection_watch.h): a few decode steps at most.
constexpr std::chrono::milliseconds kDisconnectPoll{50};
// The status nginx logs for a client that closed the connection before the answer.
constexpr int kClientClosedRequest = 499;

std::unique_ptr<tokenizer::Tokenizer> load_tokenizer(const ServerConfig& c, const std::string& model) {
  namespace fs = std::filesystem;
  fs::path path = c.tokenizer;
  if (path.empty() && fs::is_directory(model) && fs::exists(fs::path(model) / "tokenizer.json")) path = model;
  if (path.empty()) return nullptr;
  return std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_file(path));
}

}  // namespace

struct HttpServer::Impl {
  ServerConfig config;
  EngineLoop loop;
  ServerMetrics metrics;
  httplib::Server http;
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::unique_ptr<nlohmann::ordered_json> tok_config;  // tokenizer_config.json: the chat template
  std::atomic<int64_t> next_id{0};
  enum class Kind { completion, chat };
  int bound_port = -1;
  const int64_t models_created = static_cast<int64_t>(std::time(nullptr));  // what /v1/models says

  Impl(ServerConfig c, std::unique_ptr<engine::Engine> e) : config(std::move(c)), loop(std::move(e)) {
    if (config.served_model_name.empty()) config.served_model_name = loop.engine().config().model;
    tok = load_tokenizer(config, loop.engine().config().model);
    const std::filesystem::path model_dir = loop.engine().config().model;
    if (std::filesystem::exists(model_dir / "tokenizer_config.json")) {
      std::ifstream f(model_dir / "tokenizer_config.json");
      tok_config = std::make_unique<nlohmann::ordered_json>(nlohmann::ordered_json::parse(f));
    }
    const int64_t threads = config.threads > 0 ? config.threads
                                               : std::max<int64_t>(64, 2 * loop.engine().config().max_num_seqs + 16);
    http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    routes();
  }

  // Submits every choice; on a refused one, aborts those already submitted.
  std::vector<std::unique_ptr<Choice>> submit_all(const CompletionRequest& cr, const std::string& id) {
    if (const std::string f = loop.failure(); !f.empty())
      throw ApiError(503, "server_error", concat("the engine stopped after an error: ", f));
    if (loop.shutting_down()) throw ApiError(503, "server_error", kShuttingDown);
    const engine::Engine& e = loop.engine();
    check_token_ids(cr.params, e.spec().config.vocab_size);  // the client's error before any overload
    check_limits(cr, ServerLimits{e.max_model_len(), loop.kv_capacity_tokens(), config.max_pending});
    const LoopStats s = loop.stats();
    const int64_t wanted = static_cast<int64_t>(cr.prompts.size()) * cr.n;
    if (s.running + s.queued + wanted > config.max_pending)
      throw ApiError(503, "server_error",
                     concat("the server is overloaded (", s.running + s.queued, " requests in flight, at most ",
                            config.max_pending, "); retry later"));
    std::vector<std::unique_ptr<Choice>> choices;
    try {
      for (size_t p = 0; p < cr.prompts.size(); ++p)
        for (int64_t j = 0; j < cr.n; ++j) {
          const int64_t index = static_cast<int64_t>(p) * cr.n + j;
          const std::string cid = concat(id, "-", index);
          engine::SamplingParams sp = cr.params;
          if (sp.seed) sp.seed = *sp.seed + static_cast<uint64_t>(j);  // n samples of one seed differ
          sp.max_tokens = max_tokens_for(cr, static_cast<int64_t>(cr.prompts[p].size()), e.max_model_len(),
                                         loop.kv_capacity_tokens());
          // Each sequence its own images: the engine fills in positions and features.
          auto images = cr.images ? std::make_shared<engine::RequestImages>(*cr.images) : nullptr;
          auto stream = loop.submit(cid, cr.prompts[p], sp, std::move(images));
          choices.push_back(std::make_unique<Choice>(index, cid, static_cast<int64_t>(cr.prompts[p].size()), stream,
                                                     tok.get(), cr.stop));
        }
    } catch (const Error& e) {
      for (const auto& c : choices) loop.abort(c->id());
      throw ApiError(400, "invalid_request_error", e.what(), "prompt");
    }
    return choices;
  }

  // The error of a choice the engine ended with one: a shutdown is a 503 (another replica
  // can take the request), anything else a 500.
  ApiError choice_error(const Choice& c) const {
    return ApiError(loop.shutting_down() ? 503 : 500, "server_error", c.error());
  }

  void observe(const Choice& c, Clock::time_point t0) {
    metrics.observe_request(seconds_since(t0), c.first_token_s(), static_cast<int64_t>(c.tokens().size()));
  }

  // The logprobs object of some of a choice's tokens; null when the request did not ask.
  json logprobs_json(bool wanted, Kind kind, const std::vector<int64_t>& tokens,
                     const std::vector<engine::TokenLogprobs>& logprobs, int64_t& text_offset) const {
    if (!wanted) return nullptr;
    return kind == Kind::chat ? chat_logprobs_json(tokens, logprobs, tok.get())
                              : completion_logprobs_json(tokens, logprobs, tok.get(), text_offset);
  }

  // Waits until `c` has news (true), or finds its client gone (false: every choice of the
  // request is aborted, which frees their KV blocks). `client_gone` is asked once per
  // kDisconnectPoll, whether tokens keep coming or not.
  template <class ClientGone>
  bool wait_or_abandon(Choice& c, const std::vector<std::unique_ptr<Choice>>& all, Clock::time_point& last_look,
                       ClientGone client_gone) {
    while (true) {
      const bool ready = c.wait_ready(kDisconnectPoll);
      if (Clock::now() - last_look >= kDisconnectPoll) {
        last_look = Clock::now();
        if (client_gone()) {
          for (const auto& other : all) loop.abort(other->id());
          return false;
        }
      }
      if (ready) return true;
    }
  }

  ChatImages chat_images() const { return {loop.engine().image_encoder(), config.allowed_local_media_path}; }

  void completions(const httplib::Request& req, httplib::Response& res, Kind kind) {
    const Clock::time_point t0 = Clock::now();
    try {
      const CompletionRequest cr = kind == Kind::chat
                                       ? parse_chat_request(req.body, config.served_model_name, tok.get(), tok_config.get(),
                                                            chat_images())
                                       : parse_completion_request(req.body, config.served_model_name, tok.get());
      const std::string id = concat(kind == Kind::chat ? "chatcmpl-" : "cmpl-", next_id++);
      const int64_t created = static_cast<int64_t>(std::time(nullptr));
      auto choices = std::make_shared<std::vector<std::unique_ptr<Choice>>>(submit_all(cr, id));
      const bool want_logprobs = cr.params.logprobs.has_value();
      if (!cr.stream) {
        // Nothing is written before the whole answer: the connection itself is watched.
        ConnectionWatch watch(ConnectionAddress{req.local_addr, req.remote_addr, req.local_port, req.remote_port});
        Clock::time_point last_look = t0;
        std::vector<ChoiceResult> results;
        int64_t prompt_tokens = 0;
        std::vector<int64_t> fresh;
        std::string text;
        for (auto& c : *choices) {
          do {
            if (!wait_or_abandon(*c, *choices, last_look, [&] { return watch.closed(); })) {
              res.status = kClientClosedRequest;  // nobody reads it
              metrics.count_http(kClientClosedRequest);
              return;
            }
          } while (c->next(fresh, text, t0, [&] { loop.abort(c->id(), engine::FinishReason::stop); }));
          if (!c->error().empty()) throw choice_error(*c);
          observe(*c, t0);
          int64_t text_offset = 0;
          results.push_back({c->index(), c->tokens(), c->text(), c->finish_reason(),
                             logprobs_json(want_logprobs, kind, c->tokens(), c->logprobs(), text_offset)});
          prompt_tokens += c->prompt_tokens();
        }
        const json out = kind == Kind::chat
                             ? chat_response(id, config.served_model_name, created, results, prompt_tokens)
                             : completion_response(id, config.served_model_name, created, results, prompt_tokens);
        res.set_content(json_text(out), "application/json");
        metrics.count_http(200);
        return;
      }
      const bool usage = cr.include_usage;
      res.set_chunked_content_provider("text/event-stream", [this, choices, id, created, usage, t0, kind, want_logprobs](
                                                               size_t, httplib::DataSink& sink) {
        auto send = [&](const json& j) {
          const std::string event = "data: " + json_text(j) + "\n\n";
          return sink.write(event.data(), event.size());
        };
        std::vector<int64_t> fresh;
        std::string text;
        int64_t prompt_tokens = 0, completion_tokens = 0;
        Clock::time_point last_look = Clock::now();
        // Between chunks (a request queued or in a long prefill sends nothing), the sink
        // tells whether the client is still there.
        auto client_gone = [&] { return !sink.is_writable(); };
        for (auto& c : *choices) {
          bool more = true, first = true;
          int64_t text_offset = 0;
          std::vector<int64_t> unsent;  // tokens whose logprobs no chunk carried yet
          std::vector<engine::TokenLogprobs> unsent_logprobs;
          while (more) {
            if (!wait_or_abandon(*c, *choices, last_look, client_gone)) return false;
            more = c->next(fresh, text, t0, [&] { loop.abort(c->id(), engine::FinishReason::stop); });
            unsent.insert(unsent.end(), fresh.begin(), fresh.end());
            unsent_logprobs.insert(unsent_logprobs.end(), c->fresh_logprobs().begin(), c->fresh_logprobs().end());
            const engine::FinishReason fin = more ? engine::FinishReason::none : c->finish_reason();
            if (more && text.empty() && (fresh.empty() || kind == Kind::chat)) continue;
            const json logprobs = logprobs_json(want_logprobs, kind, unsent, unsent_logprobs, text_offset);
            unsent.clear();
            unsent_logprobs.clear();
            const json chunk =
                kind == Kind::chat
                    ? chat_chunk(id, config.served_model_name, created, c->index(), text, first, fin, logprobs)
                    : completion_chunk(id, config.served_model_name, created, c->index(), fresh, text, fin, logprobs);
            first = false;
            if (!send(chunk)) {
              // The client went away: free its requests (and their KV blocks) now.
              for (const auto& other : *choices) loop.abort(other->id());
              return false;
            }
          }
          observe(*c, t0);
          if (!c->error().empty()) {
            // The request failed or the server shut down under it: the stream ends with an
            // error event (what OpenAI's clients raise on), then [DONE].
            send(error_body(choice_error(*c)));
            for (const auto& other : *choices) loop.abort(other->id());
            const std::string done = "data: [DONE]\n\n";
            sink.write(done.data(), done.size());
            sink.done();
            return true;
          }
          prompt_tokens += c->prompt_tokens();
          completion_tokens += static_cast<int64_t>(c->tokens().size());
        }
        if (usage)
          send({{"id", id}, {"object", kind == Kind::chat ? "chat.completion.chunk" : "text_completion"},
                {"created", created}, {"model", config.served_model_name},
                {"choices", json::array()},
                {"usage", usage_json(prompt_tokens, completion_tokens)}});
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

  void tokenize(const httplib::Request& req, httplib::Response& res) {
    try {
      if (!tok) throw ApiError(501, "not_implemented_error", "the model has no tokenizer (no tokenizer.json found)");
      const json body = parse_body(req.body);
      check_model(body, config.served_model_name);
      std::vector<int64_t> ids;
      if (body.contains("messages")) {
        // A conversation, as vLLM's /tokenize takes it: the ids of the prompt the chat
        // template renders (add_generation_prompt defaults to true there too).
        if (tok_config == nullptr || !tok_config->contains("chat_template"))
          throw ApiError(400, "invalid_request_error",
                         "'messages' needs a chat_template in the model's tokenizer_config.json; this model has none",
                         "messages");
        ids = encode_chat(req.body, body, tok.get(), *tok_config, chat_images());
      } else {
        const auto p = body.find("prompt");
        if (p == body.end() || !p->is_string())
          throw ApiError(400, "invalid_request_error", "'prompt' (a string) or 'messages' (a chat) is required",
                         "prompt");
        const auto special = body.find("add_special_tokens");
        if (special != body.end() && !special->is_boolean())
          throw ApiError(400, "invalid_request_error", "'add_special_tokens' must be a boolean", "add_special_tokens");
        ids = tok->encode(p->get<std::string>(), special == body.end() || special->get<bool>());
      }
      res.set_content(
          json_text(json{{"tokens", ids}, {"count", ids.size()}, {"max_model_len", loop.engine().max_model_len()}}),
          "application/json");
      metrics.count_http(200);
    } catch (const ApiError& e) {
      send_error(res, e);
      metrics.count_http(e.status);
    } catch (const std::exception& e) {
      send_error(res, ApiError(400, "invalid_request_error", e.what()));
      metrics.count_http(400);
    }
  }

  void detokenize(const httplib::Request& req, httplib::Response& res) {
    try {
      if (!tok) throw ApiError(501, "not_implemented_error", "the model has no tokenizer (no tokenizer.json found)");
      const json body = parse_body(req.body);
      check_model(body, config.served_model_name);
      const auto t = body.find("tokens");
      if (t == body.end() || !t->is_array()) throw ApiError(400, "invalid_request_error", "'tokens' must be a list of integers", "tokens");
      std::vector<int64_t> ids;
      for (const json& x : *t) {
        if (!x.is_number_integer()) throw ApiError(400, "invalid_request_error", "'tokens' must be a list of integers", "tokens");
        ids.push_back(x.get<int64_t>());
      }
      res.set_content(json_text(json{{"prompt", tok->decode(ids)}}), "application/json");
      metrics.count_http(200);
    } catch (const ApiError& e) {
      send_error(res, e);
      metrics.count_http(e.status);
    } catch (const std::exception& e) {
      send_error(res, ApiError(400, "invalid_request_error", e.what(), "tokens"));
      metrics.count_http(400);
    }
  }

  void routes() {
    http.Post("/v1/completions",
              [this](const httplib::Request& q, httplib::Response& r) { completions(q, r, Kind::completion); });
    http.Post("/v1/chat/completions",
              [this](const httplib::Request& q, httplib::Response& r) { completions(q, r, Kind::chat); });
    http.Get("/health", [this](const httplib::Request&, httplib::Response& r) {
      const std::string f = loop.failure();
      if (!f.empty()) r.status = 503;  // load balancers take the replica out
      r.set_content(f.empty() ? "ok\n" : "engine failed: " + f + "\n", "text/plain");
    });
    add_model_routes(http, config.served_model_name, [this] { return model_json(); },
                     [this](int status) { metrics.count_http(status); });
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& r) {
      r.set_content(metrics.render(loop.stats(), config.served_model_name), "text/plain; version=0.0.4");
    });
    http.Post("/tokenize", [this](const httplib::Request& q, httplib::Response& r) { tokenize(q, r); });
    http.Post("/detokenize", [this](const httplib::Request& q, httplib::Response& r) { detokenize(q, r); });

    apply_server_settings(http, config.max_body_bytes, [this](int status) { metrics.count_http(status); });
  }

  json model_json() const {
    return {{"id", config.served_model_name},
            {"object", "model"},
            {"created", models_created},
            {"owned_by", "fastkernels"},
            {"root", loop.engine().config().model},
            {"parent", nullptr},
            {"max_model_len", loop.engine().max_model_len()}};
  }
};

HttpServer::HttpServer(ServerConfig config, std::unique_ptr<engine::Engine> engine)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(engine))) {}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  impl_->bound_port = bind_server(impl_->http, impl_->config.host, impl_->config.port);
  return impl_->bound_port;
}

void HttpServer::serve() { impl_->http.listen_after_bind(); }
void HttpServer::stop() { impl_->http.stop(); }

void HttpServer::stop_accepting() {
  impl_->loop.begin_shutdown();
  impl_->http.stop();
}

int64_t HttpServer::in_flight() const {
  const LoopStats s = impl_->loop.stats();
  return s.running + s.queued;
}

int64_t HttpServer::abort_in_flight() { return impl_->loop.abort_all(kShuttingDown); }

int HttpServer::port() const { return impl_->bound_port; }

}  // namespace fk::serve
