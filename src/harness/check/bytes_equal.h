// Byte equality of two buffers on one device, decided where they live. The harness
// re-checks the output of every timed call against the output it verified; copying a
// 134 MB output to the host for that took longer than the kernel by a factor of 100 and
// made a one-task evaluation take minutes.
#pragma once
#include <cstddef>

#include "fk/tensor_view.h"

namespace fk::bench {

// True when the `bytes` bytes at a and b are equal. Both on `device`; on a CUDA device the
// comparison runs on `stream` and the call waits for it (only that stream).
bool bytes_equal(const void* a, const void* b, size_t bytes, Device device, void* stream);

}  // namespace fk::bench
