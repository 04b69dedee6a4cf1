// An fk serve instance inside a test (CPU backend, any free port), read through its
// /metrics, and a tiny model folder with the test tokenizer and chat template.
#pragma once
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "models/llm/model_config.h"
#include "text/tokenizer.h"
#include "serving/http/http_server.h"

namespace fk::serve::fixtures {

inline engine::EngineConfig tiny_engine(const std::string& model = "tiny-llama") {
  engine::EngineConfig c;
  c.model = model;
  c.backend = DeviceType::cpu;
  c.num_pages = 64;
  c.max_num_batched_tokens = 128;
  c.max_num_seqs = 16;
  c.max_model_len = 256;
  return c;
}

inline const std::string& test_tokenizer_path() {
  static const std::string path = std::string(FK_SOURCE_DIR) + "/tests/data/tokenizers/bytelevel_llama3.json";
  return path;
}

// A model folder: tiny-llama's config sized to the test tokenizer's vocabulary (random
// weights), tokenizer.json, and tokenizer_config.json with the Llama 3 chat template.
// Removed with the object.
struct TextModelDir {
  std::filesystem::path dir;
  explicit TextModelDir(const std::string& tag) {
    namespace fs = std::filesystem;
    dir = fs::temp_directory_path() / ("fk-" + tag + "-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const auto tok = tokenizer::Tokenizer::from_file(test_tokenizer_path());
    nlohmann::json config = nlohmann::json::parse(model_config_json_by_name("tiny-llama"));
    config["vocab_size"] = tok.vocab_size();
    config["eos_token_id"] = nullptr;
    std::ofstream(dir / "config.json") << config.dump();
    fs::copy_file(test_tokenizer_path(), dir / "tokenizer.json", fs::copy_options::overwrite_existing);
    std::ifstream tmpl(std::string(FK_SOURCE_DIR) + "/tests/data/chat_templates/llama3.jinja");
    const std::string chat_template((std::istreambuf_iterator<char>(tmpl)), std::istreambuf_iterator<char>());
    std::ofstream(dir / "tokenizer_config.json") << nlohmann::json{{"chat_template", chat_template},
                                                                   {"bos_token", "<|begin_of_text|>"},
                                                                   {"eos_token", "<|eot_id|>"}}
                                                        .dump();
  }
  ~TextModelDir() { std::filesystem::remove_all(dir); }
  engine::EngineConfig engine() const {
    engine::EngineConfig c = tiny_engine(dir.string());
    c.dummy_weights = true;
    return c;
  }
};

class TestServer {
 public:
  explicit TestServer(const engine::EngineConfig& engine, int threads = 16, std::string name = "tiny")
      : TestServer(engine, config(threads, std::move(name))) {}
  // A server with these settings (port 0 takes any free port).
  TestServer(const engine::EngineConfig& engine, const ServerConfig& sc) {
    server_ = std::make_unique<HttpServer>(sc, std::make_unique<engine::Engine>(engine));
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->serve(); });
  }
  ~TestServer() {
    server_->stop();
    thread_.join();
  }
  int port() const { return port_; }
  static ServerConfig config(int threads = 16, std::string name = "tiny") {
    ServerConfig sc;
    sc.port = 0;
    sc.served_model_name = std::move(name);
    sc.threads = threads;
    return sc;
  }

  // POSTs JSON; the parsed answer (null when the connection failed; then status stays 0).
  nlohmann::json post(const std::string& path, const nlohmann::json& body, int* status = nullptr) const {
    httplib::Client cli("127.0.0.1", port_);
    auto r = cli.Post(path.c_str(), body.dump(), "application/json");
    if (status) *status = r ? r->status : 0;
    return r ? nlohmann::json::parse(r->body, nullptr, false) : nlohmann::json();
  }
  // The server-sent events of a streamed POST, parsed ("[DONE]" left out).
  std::vector<nlohmann::json> post_stream(const std::string& path, const nlohmann::json& body) const {
    httplib::Client cli("127.0.0.1", port_);
    auto r = cli.Post(path.c_str(), body.dump(), "application/json");
    std::vector<nlohmann::json> events;
    if (!r) return events;
    size_t pos = 0;
    while ((pos = r->body.find("data: {", pos)) != std::string::npos) {
      const size_t end = r->body.find("\n\n", pos);
      events.push_back(nlohmann::json::parse(r->body.substr(pos + 6, end - pos - 6)));
      pos = end;
    }
    return events;
  }

  // GETs a path; the parsed answer (null when the connection failed or the body is not JSON).
  nlohmann::json get(const std::string& path, int* status = nullptr) const {
    httplib::Client cli("127.0.0.1", port_);
    auto r = cli.Get(path.c_str());
    if (status) *status = r ? r->status : 0;
    return r ? nlohmann::json::parse(r->body, nullptr, false) : nlohmann::json();
  }

  std::string metrics() const {
    httplib::Client cli("127.0.0.1", port_);
    auto r = cli.Get("/metrics");
    return r ? r->body : "";
  }
  // A metric's value ("name value" line); -1 when absent.
  double metric(const std::string& name) const {
    const std::string m = metrics();
    const size_t at = m.find("\n" + name + " ");
    return at == std::string::npos ? -1 : std::stod(m.substr(at + name.size() + 2));
  }
  // Polls until no request is queued or running and every KV page is free; false on timeout.
  bool wait_idle(std::chrono::milliseconds timeout) const {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      const std::string m = metrics();
      if (m.find("\nfk_requests_running 0\n") != std::string::npos &&
          m.find("\nfk_requests_queued 0\n") != std::string::npos &&
          m.find("\nfk_kv_cache_usage_ratio 0\n") != std::string::npos)
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace fk::serve::fixtures
