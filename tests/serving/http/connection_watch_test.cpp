// ConnectionWatch on real sockets: it finds this process's end of a connection by its
// four-tuple, sees a live client (also one with unread bytes) as connected, and notices
// an orderly close and a reset.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "serving/http/connection_watch.h"

namespace fk::serve {
namespace {

struct Pair {
  int listener = -1, client = -1, accepted = -1;
  ConnectionAddress server_side;  // as the server's Request would name it
  Pair() {
    listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::listen(listener, 4), 0);
    socklen_t len = sizeof(a);
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
    client = ::socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    accepted = ::accept(listener, nullptr, nullptr);
    sockaddr_in c{};
    len = sizeof(c);
    ::getsockname(client, reinterpret_cast<sockaddr*>(&c), &len);
    server_side = {"127.0.0.1", "127.0.0.1", ntohs(a.sin_port), ntohs(c.sin_port)};
  }
  ~Pair() {
    for (int fd : {listener, client, accepted})
      if (fd >= 0) ::close(fd);
  }
};

TEST(ConnectionWatch, FindsTheServersEndOfTheConnection) {
  Pair p;
  EXPECT_EQ(find_connection_socket(p.server_side), p.accepted);
  ConnectionAddress reversed = p.server_side;  // the client's end does not match
  std::swap(reversed.local_port, reversed.remote_port);
  EXPECT_EQ(find_connection_socket(reversed), p.client);
  ConnectionAddress unknown = p.server_side;
  unknown.remote_port = 1;
  EXPECT_EQ(find_connection_socket(unknown), -1);
  EXPECT_EQ(find_connection_socket(ConnectionAddress{}), -1);
}

TEST(ConnectionWatch, LiveClientIsConnectedEvenWithUnreadBytes) {
  Pair p;
  ConnectionWatch w(p.server_side);
  EXPECT_FALSE(w.closed());
  ASSERT_EQ(::send(p.client, "GET / HTTP/1.1\r\n", 16, 0), 16);  // a pipelined request
  EXPECT_FALSE(w.closed());
  char buf[16];
  EXPECT_EQ(::recv(p.accepted, buf, sizeof(buf), 0), 16) << "peeking consumed nothing";
}

TEST(ConnectionWatch, NoticesAnOrderlyClose) {
  Pair p;
  ConnectionWatch w(p.server_side);
  EXPECT_TRUE(w.found());
  EXPECT_FALSE(w.closed());
  ::close(p.client);
  p.client = -1;
  EXPECT_TRUE(w.closed());
}

TEST(ConnectionWatch, NoticesAReset) {
  Pair p;
  ConnectionWatch w(p.server_side);
  EXPECT_FALSE(w.closed());
  const linger hard{1, 0};  // close with RST
  ::setsockopt(p.client, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
  ::close(p.client);
  p.client = -1;
  EXPECT_TRUE(w.closed());
}

TEST(ConnectionWatch, UnknownConnectionIsNeverReportedClosed) {
  ConnectionWatch w(ConnectionAddress{"127.0.0.1", "127.0.0.1", 1, 2});
  EXPECT_FALSE(w.found());
  EXPECT_FALSE(w.closed());
}

}  // namespace
}  // namespace fk::serve
