#include <cuda_runtime.h>

#include "runtime/device.h"
#include "core/cuda/allocator.h"
#include "fk/cuda/check.h"
#include "fk/cuda/stream.h"
#include "fk/status.h"

namespace fk::engine {

MemoryInfo device_memory(int device) {
  CachingDeviceAllocator::instance().empty_cache();
  FK_CUDA_CHECK(cudaSetDevice(device));
  size_t free = 0, total = 0;
  FK_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return {static_cast<int64_t>(free), static_cast<int64_t>(total)};
}

int64_t device_sm_count(int device) {
  int sms = 0;
  FK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

void CudaStreamDeleter::operator()(cuda::Stream* s) const { delete s; }
void CudaEventDeleter::operator()(cuda::Event* e) const { delete e; }

EngineStream::EngineStream(bool cuda) {
  if (cuda) stream_.reset(new cuda::Stream(cuda::StreamOptions{.non_blocking = true}));
}

EngineStream::~EngineStream() = default;

void* EngineStream::get() const { return stream_ ? static_cast<void*>(stream_->get()) : nullptr; }

StreamEvent::StreamEvent(bool cuda) {
  if (cuda) event_.reset(new cuda::Event(/*timing=*/false));
}

StreamEvent::~StreamEvent() = default;

void StreamEvent::record(void* stream) {
  if (!event_) return;
  event_->record(static_cast<cudaStream_t>(stream));
  recorded_ = true;
}

void StreamEvent::wait() const {
  if (event_ && recorded_) event_->synchronize();
}

CudaGraph& CudaGraph::operator=(CudaGraph&& o) noexcept {
  if (this != &o) {
    reset();
    graph_ = o.graph_;
    exec_ = o.exec_;
    o.graph_ = o.exec_ = nullptr;
  }
  return *this;
}

CudaGraph::~CudaGraph() { reset(); }

void CudaGraph::reset() {
  if (exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
  exec_ = graph_ = nullptr;
}

void CudaGraph::capture(void* stream, const std::function<void()>& launches) {
  FK_CHECK(stream != nullptr, "CudaGraph::capture needs a created stream, not the legacy default stream");
  reset();
  auto s = static_cast<cudaStream_t>(stream);
  // Thread-local mode: other threads may keep using the device while this one captures.
  FK_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  try {
    launches();
  } catch (...) {
    cudaGraph_t partial = nullptr;
    cudaStreamEndCapture(s, &partial);  // leave the stream usable
    if (partial) cudaGraphDestroy(partial);
    throw;
  }
  cudaGraph_t graph = nullptr;
  FK_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  graph_ = graph;
  cudaGraphExec_t exec = nullptr;
  FK_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  exec_ = exec;
}

void CudaGraph::replay(void* stream) const {
  FK_CHECK(exec_ != nullptr, "CudaGraph::replay: nothing was captured");
  FK_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), static_cast<cudaStream_t>(stream)));
}

}  // namespace fk::engine
