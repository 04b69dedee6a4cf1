// `fk serve`: the OpenAI-compatible HTTP front of an engine (cpp-httplib). Routes:
//   POST /v1/completions   text or token-id prompts, n, stream (server-sent events),
//                          sampling, seed, stop strings and token ids, logprobs
//   POST /v1/chat/completions (with tokenizer.json and the chat_template of
//                          tokenizer_config.json in the model folder), streamed or not,
//                          logprobs / top_logprobs; image_url parts for a model that
//                          reads images (image_parts.h)
//   POST /tokenize (a prompt, or chat messages through the template), /detokenize (with
//                          the model's tokenizer.json)
//   GET  /v1/models, /v1/models/{id}, /health, /metrics (Prometheus text, fk's names and
//                          vLLM's)
// HTTP threads only parse, submit and wait; the engine runs on its own thread (EngineLoop).
// A request whose client hangs up is aborted while it computes (connection_watch.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "serving/generate/engine.h"

namespace fk::serve {

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8000;                 // 0: any free port (see HttpServer::port)
  std::string served_model_name;   // what /v1/models lists and requests must name
  int64_t max_pending = 4096;      // requests in the server at once; more get 503
  // HTTP worker threads; 0: twice the engine's max_num_seqs plus 16 (at least 64). A
  // streamed request holds its thread until its last token, so fewer threads than running
  // requests would cap the engine's batch below max_num_seqs.
  int threads = 0;
  std::string tokenizer;           // tokenizer.json or its folder; empty: the model folder's, if any
  int64_t max_body_bytes = 64 << 20;  // a larger request body gets 413
  // The folder chat image parts may name local files in (file:// URLs, absolute paths);
  // empty: none, only data URLs (a client must not make the server read its disk).
  std::string allowed_local_media_path;
};

class HttpServer {
 public:
  HttpServer(ServerConfig config, std::unique_ptr<engine::Engine> engine);
  ~HttpServer();
  // Binds the socket; returns the port. Throws naming host and port when it cannot: a port
  // another server listens on is refused (no SO_REUSEPORT: two servers must never split
  // one port's traffic).
  int bind();
  void serve();  // blocks until stop()
  void stop();
  // Graceful shutdown, in steps a signal handler can interleave: stop_accepting() closes the
  // listening socket and refuses new requests (serve() returns once the answers in progress
  // are written); in_flight() counts requests still queued or running; abort_in_flight()
  // ends them all (streams get a final error event, others a 503 naming the shutdown) and
  // returns how many.
  void stop_accepting();
  int64_t in_flight() const;
  int64_t abort_in_flight();
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fk::serve
