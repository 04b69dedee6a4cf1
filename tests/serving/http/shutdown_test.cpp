// `fk serve` shutting down on signals, the real binary as a subprocess: SIGTERM stops
// accepting, lets requests in flight run for --shutdown-timeout seconds, then aborts them
// (a streamed client's last event is an error naming the shutdown) and exits; a second
// signal exits at once. The model is a config of its own with random weights, large enough
// that a long request outlives the timeout on the CPU.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The fk binary of this build: tests live in <build>/tests, the binary in <build>/bin.
fs::path fk_binary() {
  return fs::canonical("/proc/self/exe").parent_path().parent_path() / "bin" / "fk";
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

class ServeProcess {
 public:
  explicit ServeProcess(const std::string& tag, double shutdown_timeout_s) {
    dir_ = fs::temp_directory_path() / ("fk-shutdown-" + tag + "-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    // Wide enough that one decode step of a request takes milliseconds on the CPU.
    std::ofstream(dir_ / "config.json") << json{{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"},
                                                {"hidden_size", 512}, {"intermediate_size", 1024},
                                                {"num_hidden_layers", 4}, {"num_attention_heads", 8},
                                                {"num_key_value_heads", 2}, {"vocab_size", 256},
                                                {"max_position_embeddings", 4096}, {"rms_norm_eps", 1e-5},
                                                {"rope_theta", 10000.0}, {"torch_dtype", "bfloat16"}}
                                               .dump();
    log_ = dir_ / "log.txt";
    const fs::path fk = fk_binary();
    if (!fs::exists(fk)) throw std::runtime_error("no fk binary at " + fk.string() + ": build the fk_cli target");
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      const std::string timeout = std::to_string(shutdown_timeout_s);
      const std::string model = dir_.string();
      ::execl(fk.c_str(), "fk", "serve", model.c_str(), "--dummy-weights", "--device", "cpu", "--port", "0",
              "--num-pages", "512", "--max-num-seqs", "4", "--shutdown-timeout", timeout.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    const auto end = Clock::now() + std::chrono::seconds(120);
    const std::regex url(R"(http://127\.0\.0\.1:(\d+))");
    while (Clock::now() < end && port_ == 0) {
      std::smatch m;
      const std::string text = read_file(log_);
      if (std::regex_search(text, m, url)) port_ = std::stoi(m[1]);
      if (port_ == 0 && exited(std::chrono::milliseconds(50))) break;
    }
  }
  ~ServeProcess() {
    if (!reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    fs::remove_all(dir_);
  }
  int port() const { return port_; }
  void signal(int sig) const { ::kill(pid_, sig); }
  // Waits at most `timeout` for the process to end; true once it has (status in status()).
  bool exited(std::chrono::milliseconds timeout) {
    const auto end = Clock::now() + timeout;
    while (!reaped_) {
      if (::waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
      else if (Clock::now() >= end) break;
      else std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return reaped_;
  }
  int status() const { return status_; }
  std::string log() const { return read_file(log_); }

 private:
  fs::path dir_, log_;
  pid_t pid_ = -1;
  int port_ = 0;
  int status_ = 0;
  bool reaped_ = false;
};

// A streamed completion on a socket of its own; what() reads what arrived so far.
class StreamingRequest {
 public:
  StreamingRequest(int port, int64_t max_tokens) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    const std::string body = json{{"prompt", {1, 2, 3}}, {"max_tokens", max_tokens}, {"ignore_eos", true},
                                  {"stream", true}}
                                 .dump();
    const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                            "Content-Type: application/json\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body;
    if (connected_) ::send(fd_, req.data(), req.size(), MSG_NOSIGNAL);
  }
  ~StreamingRequest() { ::close(fd_); }
  bool connected() const { return connected_; }
  // Reads until `text` arrived, the server closed, or `timeout`; true when `text` is there.
  bool read_until(const std::string& text, std::chrono::milliseconds timeout) {
    const auto end = Clock::now() + timeout;
    while (received_.find(text) == std::string::npos && !closed_ && Clock::now() < end) {
      timeval tv{0, 20000};
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n > 0) received_.append(buf, static_cast<size_t>(n));
      if (n == 0) closed_ = true;
    }
    return received_.find(text) != std::string::npos;
  }
  bool closed() const { return closed_; }
  const std::string& received() const { return received_; }

 private:
  int fd_ = -1;
  bool connected_ = false, closed_ = false;
  std::string received_;
};

TEST(ServeShutdown, SigtermAbortsRequestsStillRunningAfterTheTimeout) {
  ServeProcess server("drain", /*shutdown_timeout_s=*/1);
  ASSERT_GT(server.port(), 0) << server.log();
  StreamingRequest req(server.port(), 3000);
  ASSERT_TRUE(req.connected());
  ASSERT_TRUE(req.read_until("data: {", std::chrono::seconds(60))) << req.received() << server.log();
  const auto t_signal = Clock::now();
  server.signal(SIGTERM);
  // The request cannot finish 3000 tokens in a second here: it is aborted at the deadline,
  // and its stream ends with the error event and [DONE].
  EXPECT_TRUE(req.read_until("data: [DONE]", std::chrono::seconds(10))) << req.received();
  ASSERT_TRUE(server.exited(std::chrono::seconds(10))) << server.log();
  const double took = seconds(Clock::now() - t_signal);
  EXPECT_LT(took, 2.5) << "exit took " << took << " s after SIGTERM with --shutdown-timeout 1";
  EXPECT_GE(took, 0.9) << "the request was not given its second";
  EXPECT_TRUE(WIFEXITED(server.status()) && WEXITSTATUS(server.status()) == 0) << server.log();
  const std::string& got = req.received();
  const size_t error = got.find("data: {\"error\"");
  ASSERT_NE(error, std::string::npos) << got;
  EXPECT_NE(got.find("the server is shutting down", error), std::string::npos) << got;
  EXPECT_NE(got.find("\"code\":503", error), std::string::npos) << got;
  EXPECT_NE(server.log().find("shutdown: aborted 1 requests after 1 s"), std::string::npos) << server.log();
}

TEST(ServeShutdown, RequestsThatFinishInTimeAreNotAborted) {
  ServeProcess server("finish", /*shutdown_timeout_s=*/30);
  ASSERT_GT(server.port(), 0) << server.log();
  StreamingRequest req(server.port(), 40);
  ASSERT_TRUE(req.connected());
  ASSERT_TRUE(req.read_until("data: {", std::chrono::seconds(60))) << req.received() << server.log();
  server.signal(SIGTERM);
  EXPECT_TRUE(req.read_until("data: [DONE]", std::chrono::seconds(30))) << req.received();
  ASSERT_TRUE(server.exited(std::chrono::seconds(30))) << server.log();
  EXPECT_EQ(req.received().find("\"error\""), std::string::npos) << req.received();
  EXPECT_NE(req.received().find("\"finish_reason\":\"length\""), std::string::npos) << req.received();
  EXPECT_EQ(server.log().find("aborted"), std::string::npos) << server.log();
}

TEST(ServeShutdown, SecondSignalExitsAtOnce) {
  ServeProcess server("twice", /*shutdown_timeout_s=*/30);
  ASSERT_GT(server.port(), 0) << server.log();
  StreamingRequest req(server.port(), 3000);
  ASSERT_TRUE(req.connected());
  ASSERT_TRUE(req.read_until("data: {", std::chrono::seconds(60))) << req.received() << server.log();
  server.signal(SIGTERM);
  // Still draining (30 s allowed): the first signal alone does not end it.
  EXPECT_FALSE(server.exited(std::chrono::milliseconds(500))) << server.log();
  const auto t_second = Clock::now();
  server.signal(SIGINT);
  ASSERT_TRUE(server.exited(std::chrono::seconds(5))) << server.log();
  EXPECT_LT(seconds(Clock::now() - t_second), 1.0);
  EXPECT_TRUE(WIFEXITED(server.status()) && WEXITSTATUS(server.status()) == 128 + SIGINT) << server.log();
  EXPECT_NE(server.log().find("second signal"), std::string::npos) << server.log();
}

}  // namespace
