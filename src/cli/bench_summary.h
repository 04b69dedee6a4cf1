// The human summary `fk bench latency | throughput | serve` print (the JSON goes to
// --json-out, or to stdout with --json): a few lines in vLLM's benchmark terms.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace fk::cli {

std::string bench_summary(const nlohmann::json& result);

}  // namespace fk::cli
