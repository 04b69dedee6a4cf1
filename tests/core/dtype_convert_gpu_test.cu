// fk/dtype_convert.h against CUDA's conversion intrinsics running on the GPU:
// - all 2^32 float bit patterns, compared on the device against fk's functions compiled
//   for the device: __float2half_rn, __float2bfloat16_rn, __nv_cvt_float_to_fp8 (e4m3 and
//   e5m2, __NV_SATFINITE and __NV_NOSAT);
// - all 2^16 / 2^8 narrow patterns -> float (__half2float, __bfloat162float,
//   __nv_cvt_fp8_to_halfraw + __half2float) and -> f16 bits;
// - double -> narrow (__double2half, __double2bfloat16, __nv_cvt_double_to_fp8) on the
//   interesting doubles and random ones;
// and the device intrinsics' results copied back and compared against fk's HOST build
// (all narrow patterns; interesting and 2^22 random floats; the doubles), since host and
// device compilation of the same header could differ.
// Prints mismatch counts per conversion and the first few mismatches.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/dtype_convert_reference.h"
#include "fk/cuda/check.h"
#include "fk/dtype_convert.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using test::hex;

// ---- small device-memory helpers -------------------------------------------------------

template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) {
    FK_CUDA_CHECK(cudaMalloc(&p_, std::max<size_t>(1, n) * sizeof(T)));
    FK_CUDA_CHECK(cudaMemset(p_, 0, std::max<size_t>(1, n) * sizeof(T)));
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    FK_CUDA_CHECK(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceArray() { cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return p_; }
  std::vector<T> to_host() const {
    std::vector<T> h(n_);
    FK_CUDA_CHECK(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  T* p_ = nullptr;
  size_t n_;
};

int grid_for(uint64_t n, int threads) { return static_cast<int>(std::min<uint64_t>((n + threads - 1) / threads, 8192)); }

// ---- mismatch tallies filled on the device --------------------------------------------

constexpr int kConversions = 6;
constexpr int kRecorded = 8;
struct DeviceTally {
  unsigned long long count[kConversions];
  unsigned long long slots[kConversions];
  unsigned long long input[kConversions][kRecorded];
  uint32_t fk[kConversions][kRecorded];
  uint32_t cuda[kConversions][kRecorded];
};

__device__ void record(DeviceTally* t, int k, uint64_t input, uint32_t fk_value, uint32_t cuda_value) {
  atomicAdd(&t->count[k], 1ull);
  const unsigned long long slot = atomicAdd(&t->slots[k], 1ull);
  if (slot < kRecorded) {
    t->input[k][slot] = input;
    t->fk[k][slot] = fk_value;
    t->cuda[k][slot] = cuda_value;
  }
}

// Checks a tally copied back from the device; prints the counts either way.
void expect_clean(const DeviceTally& t, const char* const names[kConversions], uint64_t total, const char* what) {
  for (int k = 0; k < kConversions; ++k) {
    std::printf("[ fk      ] %s %s: %llu mismatches of %llu\n", what, names[k], t.count[k],
                static_cast<unsigned long long>(total));
    std::string first;
    for (unsigned long long s = 0; s < std::min<unsigned long long>(t.slots[k], kRecorded); ++s)
      first += "\n  input " + hex(t.input[k][s]) + ": fk " + hex(t.fk[k][s]) + ", cuda " + hex(t.cuda[k][s]);
    EXPECT_EQ(t.count[k], 0ull) << what << " " << names[k] << ": " << t.count[k] << " of " << total << " mismatch"
                                << first;
  }
}

// The six float -> narrow conversions, CUDA's (device intrinsics) and fk's.
__device__ void cuda_from_float(float x, uint32_t out[kConversions]) {
  out[0] = __half_as_ushort(__float2half_rn(x));
  out[1] = __bfloat16_as_ushort(__float2bfloat16_rn(x));
  out[2] = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
  out[3] = __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3);
  out[4] = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
  out[5] = __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2);
}
__host__ __device__ void fk_from_float(float x, uint32_t out[kConversions]) {
  out[0] = float_to_f16(x);
  out[1] = float_to_bf16(x);
  out[2] = float_to_f8e4m3fn(x, Fp8Saturation::satfinite);
  out[3] = float_to_f8e4m3fn(x, Fp8Saturation::nosat);
  out[4] = float_to_f8e5m2(x, Fp8Saturation::satfinite);
  out[5] = float_to_f8e5m2(x, Fp8Saturation::nosat);
}
const char* const kFloatNames[kConversions] = {"float_to_f16",           "float_to_bf16",
                                               "float_to_f8e4m3fn sat",  "float_to_f8e4m3fn nosat",
                                               "float_to_f8e5m2 sat",    "float_to_f8e5m2 nosat"};

__device__ void cuda_from_double(double x, uint32_t out[kConversions]) {
  out[0] = __half_as_ushort(__double2half(x));
  out[1] = __bfloat16_as_ushort(__double2bfloat16(x));
  out[2] = __nv_cvt_double_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
  out[3] = __nv_cvt_double_to_fp8(x, __NV_NOSAT, __NV_E4M3);
  out[4] = __nv_cvt_double_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
  out[5] = __nv_cvt_double_to_fp8(x, __NV_NOSAT, __NV_E5M2);
}
__host__ __device__ void fk_from_double(double x, uint32_t out[kConversions]) {
  out[0] = double_to_f16(x);
  out[1] = double_to_bf16(x);
  out[2] = double_to_f8e4m3fn(x, Fp8Saturation::satfinite);
  out[3] = double_to_f8e4m3fn(x, Fp8Saturation::nosat);
  out[4] = double_to_f8e5m2(x, Fp8Saturation::satfinite);
  out[5] = double_to_f8e5m2(x, Fp8Saturation::nosat);
}
const char* const kDoubleNames[kConversions] = {"double_to_f16",          "double_to_bf16",
                                                "double_to_f8e4m3fn sat", "double_to_f8e4m3fn nosat",
                                                "double_to_f8e5m2 sat",   "double_to_f8e5m2 nosat"};

// ---- kernels --------------------------------------------------------------------------

// Float bit patterns first .. first + count - 1: CUDA vs fk, both on the device.
__global__ void compare_float_range(uint64_t first, uint64_t count, DeviceTally* tally) {
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < count;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const uint32_t bits = static_cast<uint32_t>(first + j);
    const float x = __uint_as_float(bits);
    uint32_t c[kConversions], f[kConversions];
    cuda_from_float(x, c);
    fk_from_float(x, f);
    for (int k = 0; k < kConversions; ++k)
      if (c[k] != f[k]) record(tally, k, bits, f[k], c[k]);
  }
}

// CUDA's results for a list of inputs (for the host-build comparison), plus the on-device
// comparison with fk's device build.
template <class T>
__global__ void convert_list(const T* xs, uint64_t n, uint32_t* cuda_out, DeviceTally* tally) {
  for (uint64_t j = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; j < n;
       j += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    uint32_t c[kConversions], f[kConversions];
    uint64_t in;
    if constexpr (sizeof(T) == 4) {
      cuda_from_float(xs[j], c);
      fk_from_float(xs[j], f);
      in = __float_as_uint(xs[j]);
    } else {
      cuda_from_double(xs[j], c);
      fk_from_double(xs[j], f);
      in = static_cast<uint64_t>(__double_as_longlong(xs[j]));
    }
    for (int k = 0; k < kConversions; ++k) {
      cuda_out[k * n + j] = c[k];
      if (c[k] != f[k]) record(tally, k, in, f[k], c[k]);
    }
  }
}

// Narrow -> float / f16 for every pattern: CUDA's results, and fk's device results.
// Columns: 0 f16->float, 1 bf16->float, 2 e4m3->f16, 3 e5m2->f16, 4 e4m3->float, 5 e5m2->float.
__global__ void narrow_patterns(uint32_t* cuda_out, uint32_t* fk_out) {
  const uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= 0x10000) return;
  const uint16_t h = static_cast<uint16_t>(b);
  cuda_out[0 * 0x10000 + b] = __float_as_uint(__half2float(__ushort_as_half(h)));
  cuda_out[1 * 0x10000 + b] = __float_as_uint(__bfloat162float(__ushort_as_bfloat16(h)));
  fk_out[0 * 0x10000 + b] = __float_as_uint(f16_to_float(h));
  fk_out[1 * 0x10000 + b] = __float_as_uint(bf16_to_float(h));
  if (b < 0x100) {
    const auto q = static_cast<__nv_fp8_storage_t>(b);
    const __half_raw h4 = __nv_cvt_fp8_to_halfraw(q, __NV_E4M3), h5 = __nv_cvt_fp8_to_halfraw(q, __NV_E5M2);
    cuda_out[2 * 0x10000 + b] = h4.x;
    cuda_out[3 * 0x10000 + b] = h5.x;
    cuda_out[4 * 0x10000 + b] = __float_as_uint(__half2float(__half(h4)));
    cuda_out[5 * 0x10000 + b] = __float_as_uint(__half2float(__half(h5)));
    fk_out[2 * 0x10000 + b] = f8e4m3fn_to_f16(static_cast<uint8_t>(b));
    fk_out[3 * 0x10000 + b] = f8e5m2_to_f16(static_cast<uint8_t>(b));
    fk_out[4 * 0x10000 + b] = __float_as_uint(f8e4m3fn_to_float(static_cast<uint8_t>(b)));
    fk_out[5 * 0x10000 + b] = __float_as_uint(f8e5m2_to_float(static_cast<uint8_t>(b)));
  }
}

// ---- tests ----------------------------------------------------------------------------

TEST(DTypeConvertGpu, AllFloatsOnDevice) {
  FK_REQUIRE_GPU();
  DeviceArray<DeviceTally> tally(1);
  constexpr uint64_t kChunk = uint64_t{1} << 26;
  for (uint64_t first = 0; first < (uint64_t{1} << 32); first += kChunk) {
    compare_float_range<<<grid_for(kChunk, 256), 256>>>(first, kChunk, tally.get());
    FK_CUDA_CHECK_LAUNCH();
  }
  FK_CUDA_CHECK(cudaDeviceSynchronize());
  expect_clean(tally.to_host()[0], kFloatNames, uint64_t{1} << 32, "all 2^32 floats, fk device build vs CUDA");
}

// Compares CUDA's device results (copied back) with fk's host build over xs.
template <class T>
void compare_list_with_host(const std::vector<T>& xs, const char* what) {
  const uint64_t n = xs.size();
  DeviceArray<T> d_xs(xs);
  DeviceArray<uint32_t> d_out(kConversions * n);
  DeviceArray<DeviceTally> tally(1);
  convert_list<T><<<grid_for(n, 256), 256>>>(d_xs.get(), n, d_out.get(), tally.get());
  FK_CUDA_CHECK_LAUNCH();
  FK_CUDA_CHECK(cudaDeviceSynchronize());
  const char* const* names = sizeof(T) == 4 ? kFloatNames : kDoubleNames;
  expect_clean(tally.to_host()[0], names, n, (std::string(what) + ", fk device build vs CUDA").c_str());
  const std::vector<uint32_t> cuda = d_out.to_host();
  uint64_t bad[kConversions] = {};
  std::string first[kConversions];
  for (uint64_t j = 0; j < n; ++j) {
    uint32_t f[kConversions];
    if constexpr (sizeof(T) == 4) fk_from_float(xs[j], f);
    else fk_from_double(xs[j], f);
    for (int k = 0; k < kConversions; ++k) {
      if (f[k] == cuda[k * n + j] || ++bad[k] > kRecorded) continue;
      uint64_t in = 0;
      std::memcpy(&in, &xs[j], sizeof(T));
      first[k] += "\n  input " + hex(in) + ": fk " + hex(f[k]) + ", cuda " + hex(cuda[k * n + j]);
    }
  }
  for (int k = 0; k < kConversions; ++k) {
    std::printf("[ fk      ] %s %s, fk host build vs CUDA device: %llu mismatches of %llu\n", what, names[k],
                static_cast<unsigned long long>(bad[k]), static_cast<unsigned long long>(n));
    EXPECT_EQ(bad[k], 0u) << what << " " << names[k] << " (fk host build vs CUDA device)" << first[k];
  }
}

TEST(DTypeConvertGpu, FloatsAgainstHostBuild) {
  FK_REQUIRE_GPU();
  compare_list_with_host(test::interesting_values<float>(), "interesting floats");
  std::mt19937_64 rng(test::seed_for("DTypeConvertGpu.FloatsAgainstHostBuild"));
  std::vector<float> xs(1 << 22);
  for (auto& x : xs) x = test::float_of(static_cast<uint32_t>(rng()));
  compare_list_with_host(xs, "random floats");
  compare_list_with_host(test::random_values_in_range<float>(rng, 1 << 22, -28, 18), "random floats in fp8/f16 range");
}

TEST(DTypeConvertGpu, DoublesOnDeviceAndAgainstHostBuild) {
  FK_REQUIRE_GPU();
  compare_list_with_host(test::interesting_values<double>(), "interesting doubles");
  std::mt19937_64 rng(test::seed_for("DTypeConvertGpu.DoublesOnDeviceAndAgainstHostBuild"));
  std::vector<double> xs(1 << 22);
  for (auto& x : xs) x = test::double_of(rng());
  compare_list_with_host(xs, "random doubles");
  compare_list_with_host(test::random_values_in_range<double>(rng, 1 << 22, -28, 18), "random doubles in fp8/f16 range");
  compare_list_with_host(test::random_values_in_range<double>(rng, 1 << 20, -136, 129), "random doubles in bf16 range");
}

TEST(DTypeConvertGpu, AllNarrowPatterns) {
  FK_REQUIRE_GPU();
  DeviceArray<uint32_t> d_cuda(6 * 0x10000), d_fk(6 * 0x10000);
  narrow_patterns<<<0x10000 / 256, 256>>>(d_cuda.get(), d_fk.get());
  FK_CUDA_CHECK_LAUNCH();
  const std::vector<uint32_t> cuda = d_cuda.to_host(), fk_dev = d_fk.to_host();
  const char* names[6] = {"f16_to_float", "bf16_to_float", "f8e4m3fn_to_f16", "f8e5m2_to_f16", "f8e4m3fn_to_float",
                          "f8e5m2_to_float"};
  for (int k = 0; k < 6; ++k) {
    const uint32_t patterns = k < 2 ? 0x10000 : 0x100;
    uint32_t bad_dev = 0, bad_host = 0;
    std::string first;
    for (uint32_t b = 0; b < patterns; ++b) {
      uint32_t host = 0;
      switch (k) {
        case 0: host = float_bits(f16_to_float(static_cast<uint16_t>(b))); break;
        case 1: host = float_bits(bf16_to_float(static_cast<uint16_t>(b))); break;
        case 2: host = f8e4m3fn_to_f16(static_cast<uint8_t>(b)); break;
        case 3: host = f8e5m2_to_f16(static_cast<uint8_t>(b)); break;
        case 4: host = float_bits(f8e4m3fn_to_float(static_cast<uint8_t>(b))); break;
        default: host = float_bits(f8e5m2_to_float(static_cast<uint8_t>(b))); break;
      }
      const uint32_t c = cuda[k * 0x10000 + b], d = fk_dev[k * 0x10000 + b];
      bad_dev += d != c;
      bad_host += host != c;
      if ((d != c || host != c) && bad_dev + bad_host <= kRecorded)
        first += "\n  pattern " + hex(b) + ": fk device " + hex(d) + ", fk host " + hex(host) + ", cuda " + hex(c);
    }
    std::printf("[ fk      ] %s: %u (fk device) and %u (fk host) mismatches of %u patterns\n", names[k], bad_dev,
                bad_host, patterns);
    EXPECT_EQ(bad_dev + bad_host, 0u) << names[k] << first;
  }
}

}  // namespace
}  // namespace fk
