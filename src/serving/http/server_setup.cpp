#include "serving/http/server_setup.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fk/status.h"

namespace fk::serve {

namespace {

// cpp-httplib 0.11 listens with a backlog of 5 and does not expose its socket: a burst of
// connections overflows the accept queue and clients see their connections dropped. Find the
// listening socket bound to `port` and raise its backlog (listen() again updates it).
void raise_listen_backlog(int port) {
  for (int fd = 0; fd < 4096; ++fd) {
    int listening = 0;
    socklen_t len = sizeof(listening);
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) continue;
    sockaddr_storage addr{};
    socklen_t alen = sizeof(addr);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &alen) != 0) continue;
    int bound = -1;
    if (addr.ss_family == AF_INET) bound = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    if (addr.ss_family == AF_INET6) bound = ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
    if (bound == port) ::listen(fd, SOMAXCONN);
  }
}

// Why `host`:`port` cannot be bound: the errno of binding a socket there as the server does
// (0 when it can be bound now).
int bind_errno(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0 || found == nullptr) return EADDRNOTAVAIL;
  int err = EADDRNOTAVAIL;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    err = ::bind(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    ::close(fd);
    if (err == 0 || err == EADDRINUSE) break;
  }
  ::freeaddrinfo(found);
  return err;
}

}  // namespace

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(json_text(error_body(e)), "application/json");
}

void add_model_routes(httplib::Server& http, const std::string& served_model, std::function<nlohmann::json()> model,
                      std::function<void(int)> count) {
  http.Get("/v1/models", [model, count](const httplib::Request&, httplib::Response& r) {
    r.set_content(json_text(nlohmann::json{{"object", "list"}, {"data", nlohmann::json::array({model()})}}),
                  "application/json");
    count(200);
  });
  http.Get(R"(/v1/models/(.+))", [served_model, model, count](const httplib::Request& q, httplib::Response& r) {
    const std::string id = q.matches[1];
    if (id != served_model) {
      send_error(r, ApiError(404, "not_found_error",
                             concat("The model '", id, "' does not exist; this server serves '", served_model, "'"),
                             "model"));
      count(404);
      return;
    }
    r.set_content(json_text(model()), "application/json");
    count(200);
  });
}

ApiError library_error(const httplib::Request& q, int status, int64_t max_body_bytes) {
  if (status == 404) return ApiError(404, "not_found_error", concat("no route for ", q.method, " ", q.path));
  if (status == 413)
    return ApiError(413, "invalid_request_error",
                    concat("the request body is larger than this server takes (", max_body_bytes, " bytes)"));
  return ApiError(status, status >= 500 ? "server_error" : "invalid_request_error",
                  concat("the server could not handle ", q.method, " ", q.path, " (HTTP ", status, ")"));
}

void apply_server_settings(httplib::Server& http, int64_t max_body_bytes, std::function<void(int)> count) {
  // Errors the HTTP library answers itself (an unknown route, an oversized body, a request
  // it cannot read) get OpenAI-style bodies too, and are counted. Responses of the routes
  // carry their body already and were counted.
  http.set_error_handler([max_body_bytes, count](const httplib::Request& q, httplib::Response& r) {
    if (!r.body.empty()) return;
    send_error(r, library_error(q, r.status, max_body_bytes));
    count(r.status);
  });
  // An exception no route caught: a 500 with an OpenAI-style body (the library's own
  // answer would put the exception text in a header).
  http.set_exception_handler([count](const httplib::Request&, httplib::Response& r, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(r, ApiError(500, "server_error", concat("internal server error: ", what)));
    count(500);
  });
  http.set_payload_max_length(static_cast<size_t>(max_body_bytes));
  // Without it an answer written as headers then body waits for the client's delayed ACK
  // (Nagle): tens of milliseconds on every non-streamed answer of a kept-alive connection.
  http.set_tcp_nodelay(true);
  // The library closes a kept-alive connection after 5 requests by default; clients that
  // pool connections would reconnect all the time.
  http.set_keep_alive_max_count(10000);
  http.set_socket_options([](int fd) {
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));  // restart while old connections linger
  });
}

int bind_server(httplib::Server& http, const std::string& host, int port) {
  const int bound = port == 0 ? http.bind_to_any_port(host) : (http.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    const int err = bind_errno(host, port);
    if (err == EADDRINUSE)
      FK_FAIL(FK_ERR_INVALID_ARGUMENT, "fk serve: port ", port, " on ", host,
              " is already in use (another server listens there); stop it or pick another --port");
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "fk serve: cannot listen on ", host, ":", port,
            err != 0 ? concat(": ", std::strerror(err)) : std::string());
  }
  raise_listen_backlog(bound);
  return bound;
}

}  // namespace fk::serve
