// The engine's options, shared by every command that starts an engine (generate, bench,
// serve): the model, its device and dtype, and the scheduler's and cache's limits.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "serving/generate/engine.h"

namespace fk::cli {

struct EngineOptions {
  std::string model = "tiny-llama";
  bool dummy_weights = false;
  std::string device = "auto";  // cpu, cuda, auto
  std::string dtype = "bf16";
  std::string quantization;  // "" or "fp8"
  int64_t max_num_batched_tokens = 8192;
  int64_t max_num_seqs = 384;  // EngineConfig says why
  int64_t max_model_len = 0;
  int64_t page_size = 16;
  int64_t num_pages = 0;
  double gpu_memory_utilization = 0.90;
  bool no_prefix_caching = false;
  bool no_chunked_prefill = false;
  bool enforce_eager = false;
  bool no_async_scheduling = false;
  int32_t decode_graph_grid = 0;
  uint64_t seed = 0;

  void add_to(CLI::App* cmd);
  engine::EngineConfig to_config() const;  // throws naming the bad option
  // The options as command-line arguments (to start a worker process with the same engine).
  std::vector<std::string> to_args() const;
};

}  // namespace fk::cli
