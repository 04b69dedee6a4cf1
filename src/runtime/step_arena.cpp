#include "runtime/step_arena.h"

#include <cstring>

#include "fk/runtime.h"

namespace fk::engine {

StepArena::StepArena(size_t capacity, Device device, bool pinned, void* stream)
    : device_(Tensor::zeros({static_cast<int64_t>(aligned(capacity))}, DType::u8, device, stream)),
      host_(pinned ? Tensor::empty_pinned({static_cast<int64_t>(aligned(capacity))}, DType::u8)
                   : Tensor::zeros({static_cast<int64_t>(aligned(capacity))}, DType::u8)) {}

TensorView StepArena::place_bytes(const void* data, size_t count, size_t elem_size, DType dtype, int64_t view_count) {
  FK_CHECK(dtype_size(dtype) == elem_size, "step arena: ", dtype_name(dtype), " elements are not ", elem_size,
           " bytes");
  const auto n = view_count < 0 ? static_cast<int64_t>(count) : view_count;
  FK_CHECK(n >= static_cast<int64_t>(count), "step arena: a view of ", n, " elements for ", count, " values");
  const size_t offset = aligned(used_);
  const size_t end = offset + static_cast<size_t>(n) * elem_size;
  FK_CHECK(end <= device_.nbytes(), "step arena: ", end, " bytes needed, ", device_.nbytes(), " reserved");
  if (count > 0) std::memcpy(static_cast<char*>(host_.data()) + offset, data, count * elem_size);
  used_ = offset + count * elem_size;
  return make_view(static_cast<char*>(device_.data()) + offset, {n}, dtype, device_.device());
}

void StepArena::upload(void* stream) {
  if (used_ == 0) return;
  rt::memcpy_async(device_.data(), device_.device(), host_.data(), Device::cpu(), used_, stream);
}

}  // namespace fk::engine
