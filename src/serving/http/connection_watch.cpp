#include "serving/http/connection_watch.h"

#include <dirent.h>
#include <netinet/in.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>

namespace fk::serve {

namespace {

// Numeric host and port of a socket address, as cpp-httplib writes them into a Request.
bool endpoint(const sockaddr_storage& addr, socklen_t len, std::string& host, int& port) {
  char h[NI_MAXHOST], p[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, h, sizeof(h), p, sizeof(p),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  host = h;
  port = std::atoi(p);
  return true;
}

// The remote port straight from the socket address first: one system call for most sockets.
bool is_connection(int fd, const ConnectionAddress& a) {
  sockaddr_storage remote{};
  socklen_t rlen = sizeof(remote);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &rlen) != 0) return false;  // not a connected socket
  int rport = -1;
  if (remote.ss_family == AF_INET) rport = ntohs(reinterpret_cast<const sockaddr_in*>(&remote)->sin_port);
  else if (remote.ss_family == AF_INET6) rport = ntohs(reinterpret_cast<const sockaddr_in6*>(&remote)->sin6_port);
  if (rport != a.remote_port) return false;
  sockaddr_storage local{};
  socklen_t llen = sizeof(local);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) != 0) return false;
  std::string lhost, rhost;
  int lport = -1;
  return endpoint(local, llen, lhost, lport) && endpoint(remote, rlen, rhost, rport) && lport == a.local_port &&
         lhost == a.local_addr && rhost == a.remote_addr;
}

}  // namespace

int find_connection_socket(const ConnectionAddress& address) {
  if (address.local_port <= 0 || address.remote_port <= 0) return -1;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  const int dir_fd = ::dirfd(dir);
  int found = -1;
  while (const dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dir_fd) continue;
    if (is_connection(static_cast<int>(fd), address)) {
      found = static_cast<int>(fd);
      break;
    }
  }
  ::closedir(dir);
  return found;
}

ConnectionWatch::ConnectionWatch(ConnectionAddress address) : fd_(find_connection_socket(address)) {}

bool ConnectionWatch::closed() {
  if (closed_ || fd_ < 0) return closed_;
  char byte;
  const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;  // bytes waiting: the client is there (a pipelined request)
  // 0: FIN, the client closed its end; an error other than "nothing to read": a reset.
  closed_ = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  return closed_;
}

}  // namespace fk::serve
