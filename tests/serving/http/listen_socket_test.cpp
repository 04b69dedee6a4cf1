// fk serve's listening socket: a second server on a port in use is refused by name (no
// SO_REUSEPORT sharing the traffic), and answers on a kept-alive connection come at once
// (TCP_NODELAY: no Nagle stall waiting for the client's delayed ACK).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "fk/status.h"
#include "serving/http/serve_test_server.h"

namespace fk::serve {
namespace {

using fixtures::TestServer;

TEST(ListenSocket, SecondServerOnAPortInUseIsRefused) {
  TestServer first(fixtures::tiny_engine());
  ServerConfig sc = TestServer::config();
  sc.port = first.port();
  HttpServer second(sc, std::make_unique<engine::Engine>(fixtures::tiny_engine()));
  try {
    second.bind();
    FAIL() << "a second server bound port " << first.port();
  } catch (const Error& e) {
    const std::string want = "port " + std::to_string(first.port()) + " on 127.0.0.1 is already in use";
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
  httplib::Client cli("127.0.0.1", first.port());
  auto health = cli.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

// A plain client: one connection, one write per request, Nagle left on (as most clients do).
class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    connected_ = fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connected() const { return connected_; }
  // Sends a GET and reads its whole answer (headers and Content-Length bytes); the body, or
  // "" when the connection broke.
  std::string get(const std::string& path) {
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n";
    if (::send(fd_, request.data(), request.size(), 0) != static_cast<ssize_t>(request.size())) return "";
    size_t header_end = std::string::npos;
    while ((header_end = buffer_.find("\r\n\r\n")) == std::string::npos)
      if (!read_more()) return "";
    const std::string headers = buffer_.substr(0, header_end);
    const size_t at = headers.find("Content-Length: ");
    if (at == std::string::npos) return "";
    const size_t length = std::stoul(headers.substr(at + 16));
    while (buffer_.size() < header_end + 4 + length)
      if (!read_more()) return "";
    std::string body = buffer_.substr(header_end + 4, length);
    buffer_.erase(0, header_end + 4 + length);
    return body;
  }

 private:
  bool read_more() {
    char chunk[4096];
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }
  int fd_ = -1;
  bool connected_ = false;
  std::string buffer_;
};

TEST(ListenSocket, KeptAliveConnectionAnswersWithoutNagleStall) {
  TestServer server(fixtures::tiny_engine());
  RawConnection conn(server.port());
  ASSERT_TRUE(conn.connected());
  std::vector<double> ms;
  for (int i = 0; i < 100; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string body = conn.get("/v1/models");
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    ASSERT_NE(body.find("\"tiny\""), std::string::npos) << "request " << i << ": " << body;
  }
  std::sort(ms.begin(), ms.end());
  // A Nagle stall is the client's delayed ACK, 40 ms on Linux; an answer itself takes well under 1 ms.
  EXPECT_LT(ms[98], 10.0) << "median " << ms[50] << " ms, max " << ms[99] << " ms";
}

}  // namespace
}  // namespace fk::serve
