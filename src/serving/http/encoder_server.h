// `fk serve` for a text encoder of the Batch pattern (BGE-M3, ColBERTv2): the HTTP front of
// an EncoderService (serving/embed/encoder_service.h). Routes:
//   POST /v1/embeddings   OpenAI's embeddings API (text or token ids; float or base64), with
//                         BGE-M3's sparse and multi-vector outputs and ColBERT's query or
//                         document vectors on request
//   POST /v1/score        MaxSim late-interaction scores of queries against documents
//   GET  /v1/models, /v1/models/{id}, /health, /metrics (Prometheus text)
// Requests run one at a time on the model (each one batched as a whole); the HTTP threads
// wait their turn. The shutdown steps are HttpServer's: stop_accepting, in_flight,
// abort_in_flight (requests still waiting for the model get a 503 naming the shutdown).
#pragma once
#include <cstdint>
#include <memory>

#include "serving/embed/encoder_service.h"
#include "serving/http/http_server.h"

namespace fk::serve {

class EncoderServer {
 public:
  // config.served_model_name must be set.
  EncoderServer(ServerConfig config, std::unique_ptr<EncoderService> service);
  ~EncoderServer();
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
