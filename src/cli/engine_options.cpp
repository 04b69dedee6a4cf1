#include "cli/engine_options.h"
#include "cli/model_lookup.h"

#include "cli/variant_option.h"
#include "fk/runtime.h"
#include "fk/status.h"

namespace fk::cli {

void EngineOptions::add_to(CLI::App* cmd) {
  cmd->add_option("--model", model, kModelHelp)
      ->capture_default_str();
  cmd->add_flag("--dummy-weights", dummy_weights, "Random weights even for a checkpoint folder (its config only)");
  cmd->add_option("--device", device, "cpu, cuda or auto (cuda when a device is visible)")->capture_default_str();
  cmd->add_option("--dtype", dtype, "bf16 or f16")->capture_default_str();
  cmd->add_option("--quantization", quantization,
                  "fp8: the routed experts of an MoE model in block-scaled fp8 (128x128 blocks; dummy and 16-bit "
                  "weights are quantized at load; an fp8 checkpoint's experts are fp8 without it)");
  cmd->add_option("--max-num-batched-tokens", max_num_batched_tokens, "Token budget of a step")->capture_default_str();
  cmd->add_option("--max-num-seqs", max_num_seqs, "Requests running at once at most")->capture_default_str();
  cmd->add_option("--max-model-len", max_model_len, "Tokens per request at most (0: the model's, at most 32768)");
  cmd->add_option("--page-size", page_size, "KV-cache page size in tokens")->capture_default_str();
  cmd->add_option("--num-pages", num_pages, "KV-cache pages (0: from free device memory; 2048 on the CPU)");
  cmd->add_option("--gpu-memory-utilization", gpu_memory_utilization, "Fraction of device memory the engine may use")
      ->capture_default_str();
  cmd->add_flag("--no-prefix-caching", no_prefix_caching, "Do not reuse the KV of shared prompt prefixes");
  cmd->add_flag("--no-chunked-prefill", no_chunked_prefill, "A prompt waits for a step with room for all of it");
  cmd->add_flag("--enforce-eager", enforce_eager, "No CUDA graphs for decode steps");
  cmd->add_option("--decode-graph-grid", decode_graph_grid,
                  "Decode graphs' attention grid class: 0 per step by context length, 1 (whole device) to 3 (2 CTAs per SM)")
      ->capture_default_str();
  cmd->add_flag("--no-async-scheduling", no_async_scheduling,
                "Schedule each step after the previous one finished (default: while it runs)");
  cmd->add_option("--seed", seed, "Engine seed (weights and requests without their own seed)")->capture_default_str();
  add_variant_option(cmd, variants);
}

engine::EngineConfig EngineOptions::to_config() const {
  select_variants(variants);
  engine::EngineConfig c;
  c.model = model;
  c.dummy_weights = dummy_weights;
  if (device == "auto")
    c.backend = rt::cuda_available() ? DeviceType::cuda : DeviceType::cpu;
  else if (device == "cpu")
    c.backend = DeviceType::cpu;
  else if (device == "cuda")
    c.backend = DeviceType::cuda;
  else
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "--device must be cpu, cuda or auto, got '", device, "'");
  const auto t = dtype_from_name(dtype);
  FK_CHECK(t && (*t == DType::bf16 || *t == DType::f16), "--dtype must be bf16 or f16, got '", dtype, "'");
  c.dtype = *t;
  c.quantization = quantization;
  c.max_num_batched_tokens = max_num_batched_tokens;
  c.max_num_seqs = max_num_seqs;
  c.max_model_len = max_model_len;
  c.page_size = page_size;
  c.num_pages = num_pages;
  c.gpu_memory_utilization = gpu_memory_utilization;
  c.prefix_caching = !no_prefix_caching;
  c.chunked_prefill = !no_chunked_prefill;
  c.cuda_graphs = !enforce_eager;
  c.async_scheduling = !no_async_scheduling;
  c.decode_graph_grid = decode_graph_grid;
  c.seed = seed;
  c.weight_seed = seed;
  c.validate();
  return c;
}

std::vector<std::string> EngineOptions::to_args() const {
  std::vector<std::string> a = {"--model", model, "--device", device, "--dtype", dtype,
                                "--max-num-batched-tokens", std::to_string(max_num_batched_tokens),
                                "--max-num-seqs", std::to_string(max_num_seqs),
                                "--max-model-len", std::to_string(max_model_len),
                                "--page-size", std::to_string(page_size),
                                "--num-pages", std::to_string(num_pages),
                                "--gpu-memory-utilization", std::to_string(gpu_memory_utilization),
                                "--seed", std::to_string(seed),
                                "--decode-graph-grid", std::to_string(decode_graph_grid)};
  if (dummy_weights) a.push_back("--dummy-weights");
  if (!quantization.empty()) a.insert(a.end(), {"--quantization", quantization});
  if (no_prefix_caching) a.push_back("--no-prefix-caching");
  if (no_chunked_prefill) a.push_back("--no-chunked-prefill");
  if (enforce_eager) a.push_back("--enforce-eager");
  if (no_async_scheduling) a.push_back("--no-async-scheduling");
  select_variants(variants);
  for (std::string& v : variant_args()) a.push_back(std::move(v));
  return a;
}

}  // namespace fk::cli
