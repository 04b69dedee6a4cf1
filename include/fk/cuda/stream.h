// RAII wrappers for the CUDA runtime objects fastkernels owns: streams, events and the
// current-device setting. Errors become fk::Error through FK_CUDA_CHECK; destructors never
// throw (a failure there is printed and otherwise ignored, since nothing can be done).
// Include only from CUDA-enabled translation units.
#pragma once
#include <cuda_runtime.h>

#include <utility>

namespace fk::cuda {

// Sets the current device for a scope and restores the previous one on exit.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

  int previous() const { return previous_; }

 private:
  int previous_ = 0;
  bool changed_ = false;
};

int current_device();

struct StreamOptions {
  // Non-blocking streams do not synchronise with the legacy default stream, which is what
  // a benchmark or an engine worker wants: nobody else's null-stream work sneaks in.
  bool non_blocking = true;
  // Lower numbers are higher priority (CUDA convention); clamped into the device's range.
  int priority = 0;
  int device = -1;  // -1: the current device
};

// An owning cudaStream_t. Move-only.
class Stream {
 public:
  explicit Stream(StreamOptions options = {});
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return stream_; }
  operator cudaStream_t() const { return stream_; }  // NOLINT: passes where a cudaStream_t is wanted
  int device() const { return device_; }
  int priority() const { return priority_; }   // the priority CUDA actually gave it
  bool non_blocking() const { return non_blocking_; }

  void synchronize() const;
  bool query() const;  // true when all work queued so far has finished

  // {least, greatest} priority of the current device, e.g. {0, -5} on Hopper.
  static std::pair<int, int> priority_range(int device = -1);

 private:
  void reset() noexcept;
  cudaStream_t stream_ = nullptr;
  int device_ = 0;
  int priority_ = 0;
  bool non_blocking_ = true;
};

// An owning cudaEvent_t. Timing events (the default) can measure elapsed_ms.
class Event {
 public:
  explicit Event(bool timing = true, int device = -1);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return event_; }
  operator cudaEvent_t() const { return event_; }  // NOLINT
  int device() const { return device_; }

  void record(cudaStream_t stream);
  void synchronize() const;
  bool query() const;  // true when the recorded work has completed
  // Makes `stream` wait (on the device) for this event.
  void block(cudaStream_t stream) const;
  // Milliseconds from `start` to this event; both must be timing events that completed.
  float elapsed_ms(const Event& start) const;
  static float elapsed_ms(const Event& start, const Event& end) { return end.elapsed_ms(start); }

 private:
  void reset() noexcept;
  cudaEvent_t event_ = nullptr;
  int device_ = 0;
  bool timing_ = true;
};

}  // namespace fk::cuda
