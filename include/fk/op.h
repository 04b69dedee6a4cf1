// The op ABI: how an implementation of an op is called, by the engine and by the harness.
//
// Every op `NAME` has one argument struct (declared in fk/ops/<family>.h) holding
// TensorViews and scalar attributes. Outputs and workspace are allocated by the caller
// (destination passing); the call is asynchronous on the given stream (cudaStream_t; null
// on the CPU backend). An implementation is a C function
//
//     fk_status impl(const void* args /* const NAME##Args* */, void* stream);
//
// A candidate shared library exports, with C linkage:
//     int       fk_abi_version(void);                          // == FK_ABI_VERSION
//     fk_status fk_op_NAME(const void* args, void* stream);    // one per op it replaces
// FK_EXPORT_CANDIDATE(NAME, fn) below writes both.
#pragma once
#include "fk/status.h"
#include "fk/tensor_view.h"

#define FK_ABI_VERSION 1

extern "C" {
typedef fk_status (*fk_op_fn)(const void* args, void* stream);
}

#define FK_EXPORT_CANDIDATE(NAME, FN)                                                   \
  extern "C" __attribute__((visibility("default"))) int fk_abi_version(void) {          \
    return FK_ABI_VERSION;                                                              \
  }                                                                                     \
  extern "C" __attribute__((visibility("default"))) fk_status fk_op_##NAME(const void* a, \
                                                                          void* s) {   \
    return FN(a, s);                                                                    \
  }
