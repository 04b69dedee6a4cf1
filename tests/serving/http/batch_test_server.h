// A BatchServer (batch_server.h) on 127.0.0.1 at a free port, serving from a thread for the
// test's scope, with a client's POST (status and parsed JSON) and GET (the body).
#pragma once
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>

#include "serving/http/batch_server.h"

namespace fk::serve {

class BatchTestServer {
 public:
  explicit BatchTestServer(BatchService service) {
    ServerConfig sc;
    sc.port = 0;
    sc.threads = 8;
    sc.served_model_name = service.served_model;
    server_ = std::make_unique<BatchServer>(sc, std::move(service));
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->serve(); });
  }
  ~BatchTestServer() {
    server_->stop();
    thread_.join();
  }
  std::pair<int, nlohmann::json> post(const std::string& path, const nlohmann::json& body) const {
    httplib::Client cli("127.0.0.1", port_);
    auto r = cli.Post(path.c_str(), body.dump(), "application/json");
    if (!r) return {0, nlohmann::json()};
    return {r->status, nlohmann::json::parse(r->body, nullptr, false)};
  }
  std::string get(const std::string& path) const {
    httplib::Client cli("127.0.0.1", port_);
    auto r = cli.Get(path.c_str());
    return r ? r->body : "";
  }

 private:
  std::unique_ptr<BatchServer> server_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace fk::serve
