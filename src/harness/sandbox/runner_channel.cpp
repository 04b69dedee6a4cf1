#include "harness/sandbox/runner_channel.h"

#include <sched.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <time.h>

#include <cerrno>
#include <chrono>
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

bool receive_runner_message(int fd, RunnerHeader& h, std::vector<std::byte>& payload, int64_t* sent_ns,
                            double poll_seconds) {
  thread_local std::vector<std::byte> buf(kMaxRunnerMessage);
  iovec iov{buf.data(), buf.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof(control);
  // Polling yields the processor at each turn: where other threads wait for it (parallel
  // evaluations on a small machine) they run, and the poll goes on as soon as one is free.
  const auto poll_until = poll_seconds >= kPollForever
                              ? std::chrono::steady_clock::time_point::max()
                              : std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                                       std::chrono::duration<double>(poll_seconds));
  bool poll = poll_seconds > 0;
  ssize_t n;
  for (;;) {
    n = recvmsg(fd, &m, poll ? MSG_DONTWAIT : 0);
    if (n >= 0) break;
    if (errno == EINTR) continue;
    if (!poll || (errno != EAGAIN && errno != EWOULDBLOCK)) break;
    poll = std::chrono::steady_clock::now() < poll_until;
    sched_yield();
  }
  if (n < static_cast<ssize_t>(sizeof(h))) return false;
  std::memcpy(&h, buf.data(), sizeof(h));
  payload.assign(buf.begin() + sizeof(h), buf.begin() + n);
  if (sent_ns != nullptr) {
    *sent_ns = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        timespec ts;
        std::memcpy(&ts, CMSG_DATA(c), sizeof(ts));
        *sent_ns = int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
      }
  }
  return true;
}

bool stamp_received_messages(int fd) {
  const int on = 1;
  return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on)) == 0;
}

int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

std::string payload_text(const std::vector<std::byte>& payload) {
  return std::string(reinterpret_cast<const char*>(payload.data()), payload.size());
}

}  // namespace fk::bench
