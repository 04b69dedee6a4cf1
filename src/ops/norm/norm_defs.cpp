#include "ops/norm/norm_defs.h"

namespace fk::ops {

std::vector<Json> norm_test_workloads() {
  return {
      {{"tokens", 1}, {"hidden", 8}},                       // one token, one vector
      {{"tokens", 17}, {"hidden", 128}},                    // 8 lanes x 2 vectors a row, partial last block
      {{"tokens", 64}, {"hidden", 64}},                     // 8 lanes x 1 vector a row, 16 rows a block
      {{"tokens", 6}, {"hidden", 40}},                      // 5 vectors on 8 lanes
      {{"tokens", 3}, {"hidden", 520}},                     // 65 vectors on 32 lanes x 4
      {{"tokens", 5}, {"hidden", 1000}},                    // one warp per row, 4 vectors a thread, ragged
      {{"tokens", 33}, {"hidden", 2048}, {"dtype", "f16"}}, // block per row, 2 vectors a thread
      {{"tokens", 9}, {"hidden", 1536}, {"dtype", "f32"}},  // block per row, 4 vectors a thread
      {{"tokens", 3}, {"hidden", 4096}},                    // the production row
      {{"tokens", 7}, {"hidden", 5120}},                    // 8 vectors a thread, ragged
      {{"tokens", 4}, {"hidden", 16384}},                   // 256 threads x 8 vectors
      {{"tokens", 2}, {"hidden", 40000}},                   // too long for registers: looped, vectorised
      {{"tokens", 2}, {"hidden", 3}},                       // not a multiple of the vector: scalar
      {{"tokens", 3}, {"hidden", 4097}, {"dtype", "f16"}},  // scalar, long row
      {{"tokens", 5}, {"hidden", 1001}, {"dtype", "f32"}},  // scalar, f32
      {{"tokens", 0}, {"hidden", 128}},                     // nothing to do
  };
}

std::vector<Json> norm_bench_workloads() {
  return {
      {{"tokens", 16384}, {"hidden", 4096}},  // prefill chunk, Llama-3.1-8B / Qwen3-8B / Mistral-7B
      {{"tokens", 1}, {"hidden", 4096}},      // single decode
      {{"tokens", 256}, {"hidden", 4096}},    // decode batch
      {{"tokens", 4096}, {"hidden", 5120}},   // 5120-wide models (Qwen2.5-14B, Mistral-Nemo)
      {{"tokens", 131072}, {"hidden", 128}},  // Qwen3 q/k norm: 4096 tokens x 32 heads of 128
  };
}

NormShape norm_shape(const Json& w, const char* op) {
  NormShape s{wl_int(w, "tokens"), wl_int(w, "hidden"), wl_dtype(w), static_cast<float>(wl_float(w, "eps", 1e-6))};
  FK_CHECK(s.tokens >= 0 && s.hidden > 0, op, " workload needs tokens >= 0 and hidden > 0, got ", w.dump());
  FK_CHECK(s.dtype == DType::f32 || s.dtype == DType::f16 || s.dtype == DType::bf16, op,
           " workload dtype must be f32, f16 or bf16, got ", w.dump());
  FK_CHECK(s.eps > 0, op, " workload needs eps > 0, got ", w.dump());
  return s;
}

}  // namespace fk::ops
