// Programmatic dependent launch (fk/cuda/pdl.cuh) across the decode chain: a norm or
// activation that lets its successor start early, then a decode GEMM that prefetches its
// weights before waiting. If a consumer read its input before pdl_wait(), it would see the
// poison written into that buffer before the producer ran. Each chain runs eagerly once
// (the expected bytes), then captured in a CUDA graph and replayed many times with the
// buffers re-poisoned in between: every replay must give the same bytes.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <vector>

#include "fk/ops/activation.h"
#include "fk/ops/linear.h"
#include "fk/ops/norm.h"
#include "fk/ops/rope.h"
#include "ops/norm_act_support.h"
#include "ops/rope_and_cache_util.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using namespace ops;

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const Tensor h = t.to(Device::cpu());
  std::vector<uint8_t> b(h.nbytes());
  std::memcpy(b.data(), h.data(), b.size());
  return b;
}

// Runs `chain` eagerly, then as a graph `replays` times with `poisoned` set to 0xFF bytes
// (NaN in bf16) before each replay; the final `out` must match the eager bytes each time.
void expect_stable_replays(const std::function<void(cudaStream_t)>& chain, const std::vector<Tensor*>& poisoned,
                           const Tensor& out, int replays) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  chain(s);
  CUDA_OK(cudaStreamSynchronize(s));
  const std::vector<uint8_t> expected = bytes_of(out);

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  chain(s);
  CUDA_OK(cudaStreamEndCapture(s, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int r = 0; r < replays; ++r) {
    for (Tensor* t : poisoned) CUDA_OK(cudaMemsetAsync(t->data(), 0xFF, t->nbytes(), s));
    CUDA_OK(cudaGraphLaunch(exec, s));
    CUDA_OK(cudaStreamSynchronize(s));
    ASSERT_EQ(bytes_of(out), expected) << "replay " << r << " differs from the eager run";
  }
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(s));
}

// rms_norm -> linear -> silu_and_mul -> linear, as in a decoder layer's MLP, for the row
// counts of both decode GEMM kernels (skinny_gemm up to 4 rows, small_m_gemm 5..16).
TEST(PdlChainGpu, NormGemmActivationGemmReplaysBitIdentical) {
  FK_REQUIRE_GPU();
  const int64_t H = 4096, I = 7168;
  for (const int64_t M : {1, 3, 8, 16}) {
    SCOPED_TRACE(concat("M=", M));
    const uint64_t seed = test::seed_for(concat("pdl_chain_", M));
    const DType dt = DType::bf16;
    Tensor x = test::device_uniform({M, H}, dt, seed, 1, -2.f, 2.f);
    Tensor norm_w = test::device_uniform({H}, dt, seed, 2, 0.5f, 1.5f);
    Tensor w_up = test::device_uniform({2 * I, H}, dt, seed, 3, -0.05f, 0.05f);
    Tensor w_down = test::device_uniform({H, I}, dt, seed, 4, -0.05f, 0.05f);
    Tensor normed = Tensor::empty({M, H}, dt, Device::cuda());
    Tensor up = Tensor::empty({M, 2 * I}, dt, Device::cuda());
    Tensor act = Tensor::empty({M, I}, dt, Device::cuda());
    Tensor out = Tensor::empty({M, H}, dt, Device::cuda());
    const auto chain = [&](cudaStream_t s) {
      call_op(RmsNormArgs{normed.view(), x.view(), norm_w.view(), 1e-6f}, DeviceType::cuda, s);
      call_op(LinearArgs{up.view(), normed.view(), w_up.view(), {}, {}, {}}, DeviceType::cuda, s);
      call_op(SiluAndMulArgs{act.view(), up.view()}, DeviceType::cuda, s);
      call_op(LinearArgs{out.view(), act.view(), w_down.view(), {}, {}, {}}, DeviceType::cuda, s);
    };
    expect_stable_replays(chain, {&normed, &up, &act, &out}, out, 50);
  }
}

// The QKV GEMM -> rope_and_cache, as at the start of a decoder layer's attention. The rope
// kernels read positions and slots before their wait (fk/ops/rope.h) but q, k and v, which
// the GEMM writes, after it: a replay with the qkv buffer poisoned must give the same cache.
TEST(PdlChainGpu, GemmThenRopeAndCacheReplaysBitIdentical) {
  FK_REQUIRE_GPU();
  const int64_t H = 2048;
  for (const int64_t M : {1, 4}) {
    SCOPED_TRACE(concat("M=", M));
    const uint64_t seed = test::seed_for(concat("pdl_chain_rope_", M));
    const test::RopeCacheLayout l{M, 32, 4, 128, 128, 16, 4, /*norm=*/true};
    test::RopeCacheBuffers b = test::make_rope_cache_buffers(l, seed).to(Device::cuda());
    Tensor x = test::device_uniform({M, H}, DType::bf16, seed, 7, -2.f, 2.f);
    Tensor w = test::device_uniform({(l.Hq + 2 * l.Hk) * l.D, H}, DType::bf16, seed, 8, -0.05f, 0.05f);
    const auto chain = [&](cudaStream_t s) {
      call_op(LinearArgs{b.qkv.view(), x.view(), w.view(), {}, {}, {}}, DeviceType::cuda, s);
      call_op(test::rope_and_cache_args(l, b), DeviceType::cuda, s);
    };
    expect_stable_replays(chain, {&b.qkv}, b.kv, 30);
  }
}

}  // namespace
}  // namespace fk
