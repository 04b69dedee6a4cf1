// `fk serve` for a model of the Batch pattern: the HTTP front of a BatchService
// (batch_service.h: a text encoder's /v1/embeddings and /v1/score, an image classifier's
// /v1/classify, a detector's /v1/detect). Routes: the service's POST endpoints and
//   GET /v1/models, /v1/models/{id}, /health, /metrics (Prometheus text)
// Requests run one at a time on the model (each one batched as a whole); the HTTP threads
// wait their turn. The shutdown steps are HttpServer's: stop_accepting, in_flight,
// abort_in_flight (requests still waiting for the model get a 503 naming the shutdown).
#pragma once
#include <cstdint>
#include <memory>

#include "serving/http/batch_service.h"
#include "serving/http/http_server.h"

namespace fk::serve {

class BatchServer {
 public:
  // config.served_model_name must be set.
  BatchServer(ServerConfig config, BatchService service);
  ~BatchServer();
  int bind();
  void serve();  // blocks until stop()
  void stop();
  void stop_accepting();
  int64_t in_flight() const;
  int64_t abort_in_flight();
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fk::serve
