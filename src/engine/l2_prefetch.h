// Loads a weight into L2 on a side stream while the main stream runs kernels that leave HBM
// idle. In a batch-1 decode step, rope, the cache write and paged attention take a few
// microseconds each and read almost nothing; the output projection after them streams 32 MB
// (Llama-3.1-8B) from HBM. Prefetching it during attention fills the idle time, and the
// GEMV then reads from L2. Total HBM traffic is unchanged; only its timing moves.
//
// start() forks the side stream off `stream` and issues the prefetch there; join() makes
// `stream` wait for the side stream, which a CUDA graph capture needs (every fork joined)
// and which costs nothing: the prefetch kernel only issues bulk prefetches and exits.
// A no-op on the CPU backend, and with FK_L2_PREFETCH=0.
#pragma once
#include <cstddef>

namespace fk::engine {

class L2Prefetcher {
 public:
  explicit L2Prefetcher(bool cuda);
  L2Prefetcher(const L2Prefetcher&) = delete;
  L2Prefetcher& operator=(const L2Prefetcher&) = delete;
  ~L2Prefetcher();

  bool enabled() const { return side_ != nullptr; }
  void start(const void* data, size_t bytes, void* stream);
  void join(void* stream);

 private:
  void* side_ = nullptr;  // cudaStream_t
  void* forked_ = nullptr;  // cudaEvent_t: the main stream's point of the fork
  void* issued_ = nullptr;  // cudaEvent_t: the prefetch issued
  bool pending_ = false;
};

}  // namespace fk::engine
