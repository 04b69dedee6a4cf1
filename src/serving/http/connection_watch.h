// Noticing that the HTTP client of a request that is not streamed hung up while the request
// is still being computed, so that it can be aborted (and its KV blocks freed) instead of
// decoding to max_tokens with nobody waiting for the answer.
//
// Why this way: cpp-httplib 0.11 (Debian's) hands a route handler the parsed Request only:
// no socket and no Request::is_connection_closed (added in later releases). Its content
// providers get DataSink::is_writable(), which does notice a closed peer (streams use it),
// but a provider runs only after the status line and headers went out: serving a whole
// answer through one would commit to 200 before the engine produced anything, and an
// engine failure could no longer be a 500. What the Request does carry is the connection's
// four-tuple (local and remote address and port, from getsockname / getpeername as numeric
// strings). The handler runs on the thread that owns the connection, which stays open
// until the handler returns; so the open socket of this process with that four-tuple is
// the connection, and it cannot be closed or reused under us meanwhile. The handler finds
// it once, in /proc/self/fd (one getpeername per socket, about a microsecond each: little
// next to any generation request), and then, once per interval while it waits for tokens,
// peeks at it: recv(MSG_PEEK | MSG_DONTWAIT) returning 0 means the client sent FIN, an
// error other than EAGAIN means it reset; pending bytes (a pipelined request) or EAGAIN
// mean it is still there. Peeking consumes nothing, so httplib reads as before.
// A client that half-closes (shutdown(SHUT_WR)) and still waits for the answer would be
// taken for gone; HTTP/1.1 clients do not do that (vLLM's server, on uvicorn, treats EOF
// the same way).
#pragma once
#include <string>

namespace fk::serve {

struct ConnectionAddress {
  std::string local_addr, remote_addr;
  int local_port = -1, remote_port = -1;
};

class ConnectionWatch {
 public:
  // Finds the connection's socket now, while it is surely still connected (a socket reset
  // by its peer no longer has a peer address to be found by).
  explicit ConnectionWatch(ConnectionAddress address);
  // True once the client has closed or reset the connection; false while it is connected
  // or when its socket was not found.
  bool closed();
  bool found() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
  bool closed_ = false;
};

// The socket of this process whose local and remote endpoints are `address`'s; -1 if none.
int find_connection_socket(const ConnectionAddress& address);

}  // namespace fk::serve
