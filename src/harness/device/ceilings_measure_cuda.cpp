// `fk env --measure`: the device's ceilings, each the best of the methods tried.
#include <cstdio>

#include "harness/device/ceilings.h"
#include "harness/device/ceilings_cuda.h"
#include "harness/device/device_info.h"
#include "harness/time/stats.h"
#include "core/cuda/allocator.h"
#include "fk/cuda/check.h"
#include "fk/cuda/stream.h"
#include "fk/tensor.h"

namespace fk::bench {

namespace detail {

std::vector<double> time_back_to_back_ms(cudaStream_t stream, int runs, const std::function<void()>& launch) {
  FK_CHECK(runs > 0, "timing needs at least one run, got ", runs);
  std::vector<cuda::Event> starts, ends;
  starts.reserve(static_cast<size_t>(runs));
  ends.reserve(static_cast<size_t>(runs));
  for (int i = 0; i < runs; ++i) {
    starts.emplace_back();
    ends.emplace_back();
  }
  for (int i = 0; i < runs; ++i) {
    starts[static_cast<size_t>(i)].record(stream);
    launch();
    ends[static_cast<size_t>(i)].record(stream);
  }
  FK_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(runs));
  for (int i = 0; i < runs; ++i) ms.push_back(ends[static_cast<size_t>(i)].elapsed_ms(starts[static_cast<size_t>(i)]));
  return ms;
}

}  // namespace detail

namespace {

using detail::time_back_to_back_ms;

void say(const MeasureOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

Ceiling measure_copy(const MeasureOptions& o, const GpuInfo& gpu, cudaStream_t s) {
  size_t free_b = 0, total_b = 0;
  FK_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  // Two buffers, and room to spare for the rest of the process.
  size_t bytes = std::min(o.copy_buffer_bytes, free_b / 3);
  bytes = bytes / (size_t{2} << 20) * (size_t{2} << 20);
  FK_CHECK(bytes >= (size_t{16} << 20), "too little free device memory for the copy test: ", format_bytes(free_b));
  const Device dev = Device::cuda(o.device);
  Tensor src = Tensor::empty({static_cast<int64_t>(bytes)}, DType::u8, dev, s);
  Tensor dst = Tensor::empty({static_cast<int64_t>(bytes)}, DType::u8, dev, s);
  FK_CUDA_CHECK(cudaMemsetAsync(src.data(), 0x5a, bytes, s));  // touch every page
  FK_CUDA_CHECK(cudaMemsetAsync(dst.data(), 0, bytes, s));
  const double moved = 2.0 * static_cast<double>(bytes);  // read + written

  auto memcpy_once = [&] { FK_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, s)); };
  time_back_to_back_ms(s, 3, memcpy_once);
  const double memcpy_bw = moved / (median(time_back_to_back_ms(s, o.copy_runs, memcpy_once)) * 1e-3);

  // The kernel: screen the configurations briefly, then time the best one fully.
  detail::CopyConfig best{};
  double best_bw = 0;
  std::string tried;
  for (const auto& cfg : detail::copy_kernel_configs()) {
    auto once = [&] { detail::launch_copy_kernel(src.data(), dst.data(), bytes, cfg, gpu.sm_count, s); };
    time_back_to_back_ms(s, 2, once);
    const double bw = moved / (median(time_back_to_back_ms(s, std::max(3, o.copy_runs / 5), once)) * 1e-3);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%dx%d %.2f", tried.empty() ? "" : ", ", cfg.threads, cfg.unroll, bw / 1e12);
    tried += buf;
    if (bw > best_bw) best_bw = bw, best = cfg;
  }
  auto best_once = [&] { detail::launch_copy_kernel(src.data(), dst.data(), bytes, best, gpu.sm_count, s); };
  const double kernel_bw = moved / (median(time_back_to_back_ms(s, o.copy_runs, best_once)) * 1e-3);

  Ceiling c;
  char method[256], detail[512];
  const std::string size = format_bytes(bytes);
  if (kernel_bw >= memcpy_bw) {
    c.value = kernel_bw;
    std::snprintf(method, sizeof method,
                  "vectorised copy kernel (16-byte streaming loads, %d threads x %d in flight), %s buffer, bytes read + "
                  "written, median of %d",
                  best.threads, best.unroll, size.c_str(), o.copy_runs);
    std::snprintf(detail, sizeof detail, "cudaMemcpyAsync D2D: %.3f TB/s; kernel configs (threads x unroll, TB/s): %s",
                  memcpy_bw / 1e12, tried.c_str());
  } else {
    c.value = memcpy_bw;
    std::snprintf(method, sizeof method, "cudaMemcpyAsync D2D, %s buffer, bytes read + written, median of %d",
                  size.c_str(), o.copy_runs);
    std::snprintf(detail, sizeof detail, "copy kernel best: %.3f TB/s; kernel configs (threads x unroll, TB/s): %s",
                  kernel_bw / 1e12, tried.c_str());
  }
  c.method = method;
  c.detail = detail;
  return c;
}

Ceiling measure_fma(const MeasureOptions& o, const GpuInfo& gpu, cudaStream_t s) {
  const detail::FmaShape shape = detail::fma_shape(gpu.sm_count, o.fma_iterations);
  Tensor out = Tensor::empty({static_cast<int64_t>(shape.blocks) * shape.threads}, DType::f32,
                             Device::cuda(o.device), s);
  auto once = [&] { detail::launch_fma_kernel(shape, out.data_as<float>(), o.fma_iterations, s); };
  time_back_to_back_ms(s, 2, once);
  const double ms = median(time_back_to_back_ms(s, o.fma_runs, once));
  Ceiling c;
  c.value = shape.flops / (ms * 1e-3);
  char method[256];
  std::snprintf(method, sizeof method,
                "fp32 FMA kernel, 8 independent chains per thread, %d blocks x %d threads, 2 flops per FMA, median of %d",
                shape.blocks, shape.threads, o.fma_runs);
  c.method = method;
  return c;
}

Ceiling measure_gemm_ceiling(const MeasureOptions& o, detail::GemmKind kind, cudaStream_t s) {
  const auto m = detail::measure_gemm(kind, o.gemm_size, o.gemm_runs, o.gemm_candidates, o.seed, o.device, s);
  Ceiling c;
  c.value = m.flops_per_s;
  c.method = m.method;
  c.detail = m.detail;
  return c;
}

}  // namespace

DeviceCeilings measure_ceilings(const MeasureOptions& o) {
  const EnvReport env = query_env();
  if (env.gpus.empty())
    FK_FAIL(FK_ERR_UNSUPPORTED, "fk env --measure: no CUDA device", env.cuda_error.empty() ? "" : " (" + env.cuda_error + ")");
  FK_CHECK(o.device >= 0 && o.device < static_cast<int>(env.gpus.size()), "fk env --measure: GPU ", o.device,
           " does not exist (", env.gpus.size(), " visible)");
  const GpuInfo& gpu = env.gpus[static_cast<size_t>(o.device)];
  cuda::DeviceGuard guard(o.device);
  cuda::Stream stream(cuda::StreamOptions{.non_blocking = true, .priority = 0, .device = o.device});

  DeviceCeilings c;
  c.device_name = gpu.name;
  c.date = utc_timestamp();
  c.driver_version = cuda_version_string(env.driver_version);
  c.runtime_version = cuda_version_string(env.runtime_version);
  c.compute_capability = gpu.compute_capability();
  c.sm_count = gpu.sm_count;

  say(o, "measuring device-to-device copy bandwidth");
  c.copy_bandwidth = measure_copy(o, gpu, stream);
  CachingDeviceAllocator::instance().empty_cache();  // the copy buffers are large: give them back
  say(o, "measuring dense bf16 GEMM throughput (cuBLASLt)");
  c.bf16_gemm = measure_gemm_ceiling(o, detail::GemmKind::bf16, stream);
  if (gpu.cc_major > 8 || (gpu.cc_major == 8 && gpu.cc_minor >= 9)) {  // fp8 tensor cores: Ada, Hopper and later
    say(o, "measuring dense fp8 e4m3 GEMM throughput (cuBLASLt)");
    try {
      c.fp8_gemm = measure_gemm_ceiling(o, detail::GemmKind::fp8_e4m3, stream);
    } catch (const Error& e) {
      c.fp8_gemm.method = std::string("not measured: ") + e.what();
    }
  } else {
    c.fp8_gemm.method = "not measured: no fp8 tensor cores before sm_89";
  }
  say(o, "measuring the fp32 FMA rate");
  c.fp32_fma = measure_fma(o, gpu, stream);
  stream.synchronize();
  CachingDeviceAllocator::instance().empty_cache();
  return c;
}

}  // namespace fk::bench
