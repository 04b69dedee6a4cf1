// DeviceTimer on the CUDA runtime.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/time/op_timer.h"
#include "fk/cuda/check.h"
#include "fk/cuda/stream.h"
#include "fk/tensor.h"

namespace fk::bench {

struct DeviceTimer::Impl {
  int device = 0;
  TimerOptions opt;
  size_t l2 = 0;
  size_t flush_bytes = 0;
  bool reset_persisting = true;  // off after the first failure (not every device supports it)
  int flush_count = 0;
  std::optional<cuda::Stream> stream;
  Tensor flush_buffer;
  std::vector<cuda::Event> starts, ends;

  // Before each timed call: evict L2 by writing a buffer twice its size, and return
  // lines a previous kernel marked persisting to normal.
  void prepare_call() {
    if (!opt.flush_l2) return;
    if (reset_persisting) {
      const cudaError_t err = cudaCtxResetPersistingL2Cache();
      if (err != cudaSuccess) {
        cudaGetLastError();
        reset_persisting = false;
      }
    }
    // A different byte each time: nothing can skip the write as redundant.
    FK_CUDA_CHECK(cudaMemsetAsync(flush_buffer.data(), flush_count++ & 0xff, flush_bytes, stream->get()));
  }

  std::vector<std::vector<double>> run(const std::vector<TimedCall>& calls, int num_sets);

  void ensure_events(size_t n) {
    while (starts.size() < n) {
      starts.emplace_back(true, device);
      ends.emplace_back(true, device);
    }
  }
};

DeviceTimer::DeviceTimer(int device, TimerOptions options) : impl_(std::make_unique<Impl>()) {
  FK_CHECK(options.min_calls >= 1 && options.max_calls >= options.min_calls,
           "timer needs 1 <= min_calls <= max_calls, got ", options.min_calls, " and ", options.max_calls);
  FK_CHECK(options.warmup_calls >= 0 && options.max_batch >= 1, "timer needs warmup_calls >= 0 and max_batch >= 1");
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    count = 0;
  }
  FK_CHECK(device >= 0 && device < count, "cannot time on GPU ", device, ": ", count, " CUDA device(s) visible",
           err != cudaSuccess ? concat(" (the driver says: ", cudaGetErrorString(err), ")") : std::string());
  Impl& m = *impl_;
  m.device = device;
  m.opt = options;
  cuda::DeviceGuard guard(device);
  int l2 = 0;
  FK_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  m.l2 = static_cast<size_t>(l2);
  m.stream.emplace(cuda::StreamOptions{.non_blocking = true, .priority = 0, .device = device});
  if (options.flush_l2) {
    m.flush_bytes = options.flush_bytes ? options.flush_bytes : std::max<size_t>(2 * m.l2, size_t{8} << 20);
    m.flush_buffer = Tensor::empty({static_cast<int64_t>(m.flush_bytes)}, DType::u8, Device::cuda(device),
                                   m.stream->get());
  }
}

DeviceTimer::~DeviceTimer() {
  // The flush buffer goes back to the allocator on our stream; finish the stream first.
  if (impl_ && impl_->stream) cudaStreamSynchronize(impl_->stream->get());
}

int DeviceTimer::device() const { return impl_->device; }
void* DeviceTimer::stream() const { return impl_->stream->get(); }
size_t DeviceTimer::l2_bytes() const { return impl_->l2; }
size_t DeviceTimer::flush_bytes() const { return impl_->flush_bytes; }
const TimerOptions& DeviceTimer::options() const { return impl_->opt; }

size_t DeviceTimer::free_memory() const {
  cuda::DeviceGuard guard(impl_->device);
  size_t free_b = 0, total_b = 0;
  FK_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  return free_b;
}

std::vector<double> DeviceTimer::time(const TimedCall& call, int num_sets) {
  return time_interleaved({call}, num_sets).front();
}

std::vector<std::vector<double>> DeviceTimer::time_interleaved(const std::vector<TimedCall>& calls, int num_sets) {
  FK_CHECK(!calls.empty(), "nothing to time");
  FK_CHECK(num_sets >= 1, "need at least one input set, got ", num_sets);
  try {
    return impl_->run(calls, num_sets);
  } catch (...) {
    // Calls already queued may still use the caller's buffers, which are about to be
    // freed while unwinding: let them finish first.
    if (cudaStreamSynchronize(impl_->stream->get()) != cudaSuccess) cudaGetLastError();
    throw;
  }
}

double DeviceTimer::time_once(const std::function<void(void* stream)>& call) {
  Impl& m = *impl_;
  cuda::DeviceGuard guard(m.device);
  cudaStream_t s = m.stream->get();
  m.ensure_events(1);
  m.prepare_call();
  m.starts[0].record(s);
  call(s);
  m.ends[0].record(s);
  FK_CUDA_CHECK(cudaStreamSynchronize(s));
  return m.ends[0].elapsed_ms(m.starts[0]) * 1e3;
}

std::vector<std::vector<double>> DeviceTimer::Impl::run(const std::vector<TimedCall>& calls, int num_sets) {
  Impl& m = *this;
  const TimerOptions& o = m.opt;
  cuda::DeviceGuard guard(m.device);
  cudaStream_t s = m.stream->get();
  void* sv = s;
  const size_t k = calls.size();

  for (int w = 0; w < o.warmup_calls; ++w) {
    for (const auto& c : calls) {
      m.prepare_call();
      c(w % num_sets, sv);
    }
  }
  FK_CUDA_CHECK(cudaStreamSynchronize(s));

  std::vector<std::vector<double>> samples(k);
  int rounds = 0;
  double total_ms = 0;  // timed device time of all callables
  int batch = std::min({10, o.max_batch, o.max_calls});
  while (true) {
    const bool enough_calls = rounds >= o.min_calls;
    if (rounds >= o.max_calls) break;
    if (enough_calls && total_ms >= o.min_time_ms) break;
    if (rounds >= std::min(o.min_calls, 5) && total_ms >= o.max_time_ms) break;

    m.ensure_events(static_cast<size_t>(batch) * k);
    for (int r = 0; r < batch; ++r) {
      const int set = (rounds + r) % num_sets;
      for (size_t j = 0; j < k; ++j) {
        const size_t e = static_cast<size_t>(r) * k + j;
        m.prepare_call();
        m.starts[e].record(s);
        calls[j](set, sv);
        m.ends[e].record(s);
      }
    }
    FK_CUDA_CHECK(cudaStreamSynchronize(s));
    for (int r = 0; r < batch; ++r) {
      for (size_t j = 0; j < k; ++j) {
        const size_t e = static_cast<size_t>(r) * k + j;
        const double ms = m.ends[e].elapsed_ms(m.starts[e]);
        samples[j].push_back(ms * 1e3);
        total_ms += ms;
      }
    }
    rounds += batch;

    // Size the next batch to what is still needed: the calls still missing, or the time.
    const double per_round_ms = total_ms / rounds;
    int want = std::max(o.min_calls - rounds, 1);
    if (per_round_ms > 0 && total_ms < o.min_time_ms)
      want = std::max(want, static_cast<int>(std::ceil((o.min_time_ms - total_ms) / per_round_ms)));
    batch = std::clamp(want, 1, std::max(1, std::min(o.max_batch, o.max_calls - rounds)));
  }
  return samples;
}

}  // namespace fk::bench
