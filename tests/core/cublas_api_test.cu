// core/cuda/cublas_api.h: cuBLAS loaded on first use instead of linked (no GPU needed; CUDA
// builds only). Each test runs in its own process (ctest), so each starts without cuBLAS.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/cublas_exposure.h"
#include "core/cuda/cublas_api.h"

namespace fk {
namespace {

bool cublas_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("libcublas") != std::string::npos) return true;
  return false;
}

TEST(CublasApi, AProcessStartsWithoutCublasAndLoadsItOnFirstUse) {
  EXPECT_FALSE(cublas_mapped()) << "cuBLAS is linked: every process start pays for loading it";
  const cuda::CublasApi& api = cuda::cublas_api();
  EXPECT_TRUE(cublas_mapped());
  EXPECT_EQ(api.cublasLtGetVersion() / 10000, static_cast<size_t>(CUBLAS_VER_MAJOR));
  EXPECT_EQ(&api, &cuda::cublas_api()) << "loaded once";
}

TEST(CublasApi, ResolvesEveryFunction) {
  const cuda::CublasApi& api = cuda::cublas_api();
#define FK_EXPECT_RESOLVED(name) EXPECT_NE(reinterpret_cast<const void*>(api.name), nullptr) << #name;
  FK_CUBLASLT_FUNCTIONS(FK_EXPECT_RESOLVED)
  FK_CUBLAS_FUNCTIONS(FK_EXPECT_RESOLVED)
  FK_EXPECT_RESOLVED(cublasGemmStridedBatchedEx)
#undef FK_EXPECT_RESOLVED
  EXPECT_STREQ(api.cublasLtGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
}

TEST(CublasApi, InitialisersFillTheOpaqueStructs) {
  cublasLtMatmulDescOpaque_t desc;
  cublasLtMatrixLayoutOpaque_t layout;
  cublasLtMatmulPreferenceOpaque_t pref;
  EXPECT_EQ(cuda::matmul_desc_init(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cuda::matrix_layout_init(&layout, CUDA_R_16BF, 64, 32, 64), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cuda::matmul_preference_init(&pref), CUBLAS_STATUS_SUCCESS);
  // The size each initialiser passes is checked by cuBLAS: a wrong one is INVALID_VALUE.
}

// The engine's copy is private: a library loaded later (a candidate calling cuBLAS) sees
// cuBLAS's symbols only after they are exposed.
TEST(CublasApi, SymbolsReachLaterLibrariesOnlyOnceExposed) {
  (void)cuda::cublas_api();
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "cublasLtGetVersion"), nullptr);
  cuda::expose_cublas_to_later_libraries();
  EXPECT_NE(dlsym(RTLD_DEFAULT, "cublasLtGetVersion"), nullptr);
  EXPECT_NE(dlsym(RTLD_DEFAULT, "cublasCreate_v2"), nullptr);
}

}  // namespace
}  // namespace fk
