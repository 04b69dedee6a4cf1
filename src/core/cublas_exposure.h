// Candidates are compiled without linking cuBLAS: one that calls it takes the symbols from
// the process. The engine loads cuBLAS privately (core/cuda/cublas_api.h), so before such a
// candidate is loaded, cuBLAS is loaded again into the global scope.
#pragma once

namespace fk::cuda {

// Makes cuBLAS's and cuBLASLt's symbols visible to libraries loaded after this call. Without
// CUDA it does nothing: a candidate calling cuBLAS then fails to load, naming the symbol.
void expose_cublas_to_later_libraries();

}  // namespace fk::cuda
