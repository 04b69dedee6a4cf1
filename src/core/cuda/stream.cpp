#include "fk/cuda/stream.h"

#include <algorithm>
#include <cstdio>

#include "fk/cuda/check.h"

namespace fk::cuda {

namespace {
// Destructors must not throw: report and carry on.
void warn_if_failed(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "fk: warning: %s failed: %s\n", what, cudaGetErrorString(err));
  cudaGetLastError();
}
int resolve_device(int device) { return device >= 0 ? device : current_device(); }
}  // namespace

int current_device() {
  int d = 0;
  FK_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

DeviceGuard::DeviceGuard(int device) {
  previous_ = current_device();
  if (device != previous_) {
    FK_CUDA_CHECK(cudaSetDevice(device));
    changed_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (changed_) warn_if_failed(cudaSetDevice(previous_), "cudaSetDevice (restoring the device)");
}

std::pair<int, int> Stream::priority_range(int device) {
  DeviceGuard guard(resolve_device(device));
  int least = 0, greatest = 0;
  FK_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  return {least, greatest};
}

Stream::Stream(StreamOptions options) {
  device_ = resolve_device(options.device);
  DeviceGuard guard(device_);
  const auto [least, greatest] = priority_range(device_);
  // greatest <= least numerically (lower is higher priority).
  const int priority = std::clamp(options.priority, greatest, least);
  non_blocking_ = options.non_blocking;
  FK_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, non_blocking_ ? cudaStreamNonBlocking : cudaStreamDefault,
                                             priority));
  FK_CUDA_CHECK(cudaStreamGetPriority(stream_, &priority_));
}

Stream::~Stream() { reset(); }

void Stream::reset() noexcept {
  if (!stream_) return;
  warn_if_failed(cudaStreamDestroy(stream_), "cudaStreamDestroy");
  stream_ = nullptr;
}

Stream::Stream(Stream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)),
      device_(other.device_),
      priority_(other.priority_),
      non_blocking_(other.non_blocking_) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    reset();
    stream_ = std::exchange(other.stream_, nullptr);
    device_ = other.device_;
    priority_ = other.priority_;
    non_blocking_ = other.non_blocking_;
  }
  return *this;
}

void Stream::synchronize() const { FK_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

bool Stream::query() const {
  const cudaError_t err = cudaStreamQuery(stream_);
  if (err == cudaErrorNotReady) {
    cudaGetLastError();  // "not ready" is an answer, not an error
    return false;
  }
  FK_CUDA_CHECK(err);
  return true;
}

Event::Event(bool timing, int device) : device_(resolve_device(device)), timing_(timing) {
  DeviceGuard guard(device_);
  FK_CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}

Event::~Event() { reset(); }

void Event::reset() noexcept {
  if (!event_) return;
  warn_if_failed(cudaEventDestroy(event_), "cudaEventDestroy");
  event_ = nullptr;
}

Event::Event(Event&& other) noexcept
    : event_(std::exchange(other.event_, nullptr)), device_(other.device_), timing_(other.timing_) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    reset();
    event_ = std::exchange(other.event_, nullptr);
    device_ = other.device_;
    timing_ = other.timing_;
  }
  return *this;
}

void Event::record(cudaStream_t stream) { FK_CUDA_CHECK(cudaEventRecord(event_, stream)); }

void Event::synchronize() const { FK_CUDA_CHECK(cudaEventSynchronize(event_)); }

bool Event::query() const {
  const cudaError_t err = cudaEventQuery(event_);
  if (err == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  FK_CUDA_CHECK(err);
  return true;
}

void Event::block(cudaStream_t stream) const { FK_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0)); }

float Event::elapsed_ms(const Event& start) const {
  FK_CHECK(timing_ && start.timing_, "elapsed_ms needs two timing events (created with timing = true)");
  float ms = 0;
  FK_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
  return ms;
}

}  // namespace fk::cuda
