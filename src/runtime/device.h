// What the engine needs from the device beyond tensors and ops: free memory (to size the
// KV cache) and CUDA graphs (to replay decode steps without launch overhead). CPU builds
// answer with clear "built without CUDA" errors.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

namespace fk::cuda {
class Stream;
class Event;
}  // namespace fk::cuda

namespace fk::engine {

// Deleters defined where the CUDA types are complete (device_cuda.cpp).
struct CudaStreamDeleter {
  void operator()(cuda::Stream* s) const;
};
struct CudaEventDeleter {
  void operator()(cuda::Event* e) const;
};

struct MemoryInfo {
  int64_t free_bytes = 0;
  int64_t total_bytes = 0;
};
// The device's free and total memory after the caching allocator gave its unused blocks back.
MemoryInfo device_memory(int device);
// The device's multiprocessor count (decode graphs choose their attention grid by it).
int64_t device_sm_count(int device);

// A non-blocking CUDA stream for the engine's work (none on the CPU backend). A facade
// over fk::cuda::Stream (fk/cuda/stream.h), the project's one stream wrapper, that this
// CUDA-free header can name.
class EngineStream {
 public:
  explicit EngineStream(bool cuda);
  EngineStream(const EngineStream&) = delete;
  EngineStream& operator=(const EngineStream&) = delete;
  ~EngineStream();
  void* get() const;

 private:
  std::unique_ptr<cuda::Stream, CudaStreamDeleter> stream_;
};

// A point in a stream's work that the host can wait for (a CUDA event without timing,
// fk::cuda::Event). On the CPU backend (no stream) work is done when it is issued: both
// calls do nothing.
class StreamEvent {
 public:
  explicit StreamEvent(bool cuda);
  StreamEvent(const StreamEvent&) = delete;
  StreamEvent& operator=(const StreamEvent&) = delete;
  ~StreamEvent();
  void record(void* stream);  // marks the work issued to `stream` so far
  void wait() const;          // blocks the host until that work is done (at once if never recorded)

 private:
  std::unique_ptr<cuda::Event, CudaEventDeleter> event_;
  bool recorded_ = false;
};

// One captured sequence of launches on a stream, replayed as a whole.
class CudaGraph {
 public:
  CudaGraph() = default;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  CudaGraph(CudaGraph&& o) noexcept : graph_(o.graph_), exec_(o.exec_) { o.graph_ = o.exec_ = nullptr; }
  CudaGraph& operator=(CudaGraph&& o) noexcept;
  ~CudaGraph();

  // Records what `launches` puts on `stream` (which must not be the legacy default stream).
  // Anything but kernel launches and async copies fails the capture with a clear error.
  void capture(void* stream, const std::function<void()>& launches);
  void replay(void* stream) const;
  bool captured() const { return exec_ != nullptr; }

 private:
  void reset();
  void* graph_ = nullptr;
  void* exec_ = nullptr;
};

}  // namespace fk::engine
