#include "runtime/device.h"
#include "fk/status.h"

namespace fk::engine {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  FK_FAIL(FK_ERR_UNSUPPORTED, what, ": fastkernels was built without CUDA (FK_CUDA=OFF)");
}
}  // namespace

// Never given a pointer: the constructors below refuse the CUDA backend.
void CudaStreamDeleter::operator()(cuda::Stream*) const {}
void CudaEventDeleter::operator()(cuda::Event*) const {}

EngineStream::EngineStream(bool cuda) {
  if (cuda) no_cuda("EngineStream");
}
EngineStream::~EngineStream() = default;
void* EngineStream::get() const { return nullptr; }
MemoryInfo device_memory(int) { no_cuda("device_memory"); }
int64_t device_sm_count(int) { no_cuda("device_sm_count"); }
StreamEvent::StreamEvent(bool cuda) {
  if (cuda) no_cuda("StreamEvent");
}
StreamEvent::~StreamEvent() = default;
void StreamEvent::record(void*) {}
void StreamEvent::wait() const {}
CudaGraph& CudaGraph::operator=(CudaGraph&& o) noexcept {
  graph_ = o.graph_;
  exec_ = o.exec_;
  return *this;
}
CudaGraph::~CudaGraph() = default;
void CudaGraph::reset() {}
void CudaGraph::capture(void*, const std::function<void()>&) { no_cuda("CudaGraph::capture"); }
void CudaGraph::replay(void*) const { no_cuda("CudaGraph::replay"); }

}  // namespace fk::engine
