// RAII CUDA helpers (Stream, Event, DeviceGuard) on a device, and the FK_CUBLAS_CHECK
// message (which needs no device, only a CUDA build).
#include <gtest/gtest.h>

#if FK_WITH_CUDA
#include <cublasLt.h>

#include <string>

#include "fk/cuda/check.h"
#include "fk/cuda/cublas_check.h"
#include "fk/cuda/stream.h"
#include "support/test_seed.h"

namespace fk::cuda {
namespace {

TEST(CublasCheck, NamesTheCallThePlaceAndTheStatus) {
  try {
    FK_CUBLAS_CHECK(CUBLAS_STATUS_INVALID_VALUE);
    FAIL() << "no error thrown";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.code(), FK_ERR_CUDA);
    EXPECT_NE(msg.find("CUBLAS_STATUS_INVALID_VALUE failed"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CUBLAS_STATUS_INVALID_VALUE:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("stream_gpu_test.cpp:"), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(FK_CUBLAS_CHECK(CUBLAS_STATUS_SUCCESS));
  EXPECT_EQ(cublas_status_code(CUBLAS_STATUS_ALLOC_FAILED), FK_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(cublas_status_code(CUBLAS_STATUS_NOT_SUPPORTED), FK_ERR_UNSUPPORTED);
}

TEST(StreamGpu, CreatesNonBlockingStreamsWithPriorities) {
  FK_REQUIRE_GPU();
  const auto [least, greatest] = Stream::priority_range();
  Stream low(StreamOptions{.non_blocking = true, .priority = least});
  Stream high(StreamOptions{.non_blocking = true, .priority = greatest - 100});  // clamped
  EXPECT_EQ(low.priority(), least);
  EXPECT_EQ(high.priority(), greatest);
  unsigned flags = 0;
  ASSERT_EQ(cudaStreamGetFlags(low, &flags), cudaSuccess);
  EXPECT_EQ(flags & cudaStreamNonBlocking, cudaStreamNonBlocking);
  Stream blocking(StreamOptions{.non_blocking = false});
  ASSERT_EQ(cudaStreamGetFlags(blocking, &flags), cudaSuccess);
  EXPECT_EQ(flags & cudaStreamNonBlocking, 0u);
  EXPECT_TRUE(low.query());
  Stream moved = std::move(low);
  EXPECT_EQ(low.get(), nullptr);
  EXPECT_NE(moved.get(), nullptr);
  moved.synchronize();
}

TEST(StreamGpu, EventsMeasureElapsedTime) {
  FK_REQUIRE_GPU();
  Stream s;
  Event start, end;
  void* buf = nullptr;
  FK_CUDA_CHECK(cudaMalloc(&buf, 256 << 20));
  start.record(s);
  for (int i = 0; i < 10; ++i) FK_CUDA_CHECK(cudaMemsetAsync(buf, i, 256 << 20, s));
  end.record(s);
  end.synchronize();
  EXPECT_TRUE(end.query());
  const float ms = end.elapsed_ms(start);
  EXPECT_GT(ms, 0.f);
  EXPECT_LT(ms, 10'000.f);
  EXPECT_FLOAT_EQ(Event::elapsed_ms(start, end), ms);
  FK_CUDA_CHECK(cudaFree(buf));
  Event untimed(false);
  untimed.record(s);
  untimed.synchronize();
  EXPECT_THROW((void)untimed.elapsed_ms(start), Error);
}

TEST(StreamGpu, DeviceGuardRestoresTheDevice) {
  FK_REQUIRE_GPU();
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  const int before = current_device();
  {
    DeviceGuard g(n - 1);
    EXPECT_EQ(current_device(), n - 1);
    EXPECT_EQ(g.previous(), before);
  }
  EXPECT_EQ(current_device(), before);
  EXPECT_THROW(DeviceGuard bad(n + 5), Error);
  EXPECT_EQ(current_device(), before);
}

TEST(StreamGpu, CudaErrorsNameTheCall) {
  FK_REQUIRE_GPU();
  try {
    FK_CUDA_CHECK(cudaSetDevice(1 << 20));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cudaSetDevice(1 << 20) failed"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fk::cuda

#else
TEST(StreamGpu, NeedsACudaBuild) { GTEST_SKIP() << "CUDA helpers are built with CUDA only"; }
#endif
