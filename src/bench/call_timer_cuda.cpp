#include <cuda_runtime.h>

#include "bench/call_timer.h"
#include "fk/cuda/check.h"

namespace fk::bench {

namespace {

class CudaTimer final : public CallTimer {
 public:
  CudaTimer() {
    FK_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    FK_CUDA_CHECK(cudaEventCreate(&start_));
    FK_CUDA_CHECK(cudaEventCreate(&stop_));
    int dev = 0, l2 = 0;
    FK_CUDA_CHECK(cudaGetDevice(&dev));
    FK_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    scrub_bytes_ = 2 * static_cast<size_t>(l2 > 0 ? l2 : 64 << 20);
    FK_CUDA_CHECK(cudaMalloc(&scrub_, scrub_bytes_));
  }
  ~CudaTimer() override {
    cudaFree(scrub_);
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }
  double time_us(const std::function<void()>& call) override {
    // Evict the previous call's data: writing twice the L2 size replaces every line.
    FK_CUDA_CHECK(cudaMemsetAsync(scrub_, ++scrub_value_ & 0xff, scrub_bytes_, stream_));
    // Lines pinned by a persisting access policy survive a scrub; reset them.
    FK_CUDA_CHECK(cudaCtxResetPersistingL2Cache());
    FK_CUDA_CHECK(cudaEventRecord(start_, stream_));
    call();
    FK_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    FK_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    FK_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms * 1000.0;
  }
  void* stream() const override { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  void* scrub_ = nullptr;
  size_t scrub_bytes_ = 0;
  int scrub_value_ = 0;
};

}  // namespace

std::unique_ptr<CallTimer> make_cuda_timer() { return std::make_unique<CudaTimer>(); }

}  // namespace fk::bench
