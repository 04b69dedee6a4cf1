// The engine's options, shared by every command that starts an engine (generate, bench,
// serve, e2e, capture): the model, its device and dtype, the scheduler's and cache's
// limits, and the ops' kernel variants.
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
  std::vector<std::string> variants;  // --variant specs (cli/variant_option.h)

  void add_to(CLI::App* cmd);
  // Throws naming the bad option. Also selects the --variant specs in the op registry
  // (process-wide: the engine's ops read them on their launch paths).
  engine::EngineConfig to_config() const;
  // The options as command-line arguments (to start a worker process with the same engine
  // and the same kernel variants).
  std::vector<std::string> to_args() const;
};

}  // namespace fk::cli
