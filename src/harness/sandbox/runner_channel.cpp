#include "harness/sandbox/runner_channel.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

namespace fk::bench {

bool send_runner_message(int fd, const RunnerHeader& h, const void* payload, size_t bytes) {
  if (sizeof(h) + bytes > kMaxRunnerMessage) return false;
  iovec iov[2] = {{const_cast<RunnerHeader*>(&h), sizeof(h)}, {const_cast<void*>(payload), bytes}};
  msghdr m{};
  m.msg_iov = iov;
  m.msg_iovlen = bytes > 0 ? 2 : 1;
  ssize_t n;
  do n = sendmsg(fd, &m, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof(h) + bytes);
}

bool receive_runner_message(int fd, RunnerHeader& h, std::vector<std::byte>& payload, bool spin) {
  thread_local std::vector<std::byte> buf(kMaxRunnerMessage);
  ssize_t n;
  do n = recv(fd, buf.data(), buf.size(), spin ? MSG_DONTWAIT : 0);
  while (n < 0 && (errno == EINTR || (spin && (errno == EAGAIN || errno == EWOULDBLOCK))));
  if (n < static_cast<ssize_t>(sizeof(h))) return false;
  std::memcpy(&h, buf.data(), sizeof(h));
  payload.assign(buf.begin() + sizeof(h), buf.begin() + n);
  return true;
}

std::string payload_text(const std::vector<std::byte>& payload) {
  return std::string(reinterpret_cast<const char*>(payload.data()), payload.size());
}

}  // namespace fk::bench
