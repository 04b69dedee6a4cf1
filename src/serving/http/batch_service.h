// What `fk serve` runs for a model of the Batch pattern (a text encoder, an image classifier
// or detector): its POST endpoints, each a request body to a response JSON, behind one HTTP
// front (batch_server.h). A service's errors for a client are ApiErrors naming the field.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fk::serve {

struct BatchEndpoint {
  std::string path;  // "/v1/embeddings"
  std::function<nlohmann::json(const std::string& body)> handle;
};

struct BatchService {
  std::string served_model;
  std::string task;  // /v1/models' "task": "embed", "score", "classify", "detect"
  std::vector<BatchEndpoint> endpoints;
  std::shared_ptr<void> owner;  // the object the endpoints call, kept alive with them
};

}  // namespace fk::serve
