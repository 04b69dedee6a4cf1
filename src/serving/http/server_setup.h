// What every fk HTTP server (the generate server, the encoder server) sets up the same way
// on its cpp-httplib server: OpenAI-style error bodies for the library's own errors (an
// unknown route, an oversized body) and for exceptions no route caught, the body limit,
// TCP_NODELAY, long keep-alive, SO_REUSEADDR; and binding with a named error and a listen
// backlog fit for bursts of connections.
#pragma once
#include <httplib.h>

#include <cstdint>
#include <functional>
#include <string>

#include "serving/http/openai_api.h"

namespace fk::serve {

// The error of requests ended by a shutdown (and of those refused while it runs).
inline constexpr const char* kShuttingDown = "the server is shutting down";

// `count` is called with the status of each error answered here (for the metrics).
void apply_server_settings(httplib::Server& http, int64_t max_body_bytes, std::function<void(int)> count);

// The error the library answered a request with, as an OpenAI error.
ApiError library_error(const httplib::Request& q, int status, int64_t max_body_bytes);

// GET /v1/models (the one model) and /v1/models/{id} (404 naming the served model for any
// other id; ids may hold '/', as HF names do). `count` is called with each answer's status.
void add_model_routes(httplib::Server& http, const std::string& served_model, std::function<nlohmann::json()> model,
                      std::function<void(int)> count);

// Writes an OpenAI error body and status.
void send_error(httplib::Response& res, const ApiError& e);

// Binds `http` to host:port (port 0: any free one); returns the port. Throws naming host and
// port when it cannot (a port another server listens on is refused).
int bind_server(httplib::Server& http, const std::string& host, int port);

}  // namespace fk::serve
