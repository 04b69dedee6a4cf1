// Tensor: owning, on the CPU (64-byte aligned host memory) or a CUDA device (memory from
// the caching allocator). Cheap to copy: copies share storage, like a shared_ptr.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fk/tensor_view.h"

namespace fk {

using Shape = std::vector<int64_t>;

class Tensor {
 public:
  Tensor() = default;
  // Uninitialised contiguous tensor. `stream` orders device allocation and release.
  static Tensor empty(const Shape& shape, DType dtype, Device device = Device::cpu(),
                      void* stream = nullptr);
  static Tensor zeros(const Shape& shape, DType dtype, Device device = Device::cpu(),
                      void* stream = nullptr);
  // Uninitialised host tensor in page-locked memory (rt::host_pinned_malloc): the source of
  // asynchronous uploads.
  static Tensor empty_pinned(const Shape& shape, DType dtype);

  bool defined() const { return defined_; }
  const TensorView& view() const { return view_; }
  operator TensorView() const { return view_; }  // NOLINT: tensors pass as views to ops

  void* data() const { return view_.data; }
  template <class T>
  T* data_as() const { return static_cast<T*>(view_.data); }
  DType dtype() const { return view_.dtype; }
  Device device() const { return view_.device; }
  int rank() const { return view_.rank; }
  int64_t size(int dim) const { return view_.size(dim); }
  Shape shape() const { return Shape(view_.shape, view_.shape + view_.rank); }
  int64_t numel() const { return view_.numel(); }
  size_t nbytes() const { return static_cast<size_t>(view_.nbytes()); }

  // Synchronous copy to another device (a fresh contiguous tensor).
  Tensor to(Device device) const;
  Tensor clone() const { return to(device()); }
  // Copies src's contents in; shapes and dtypes must match (devices may differ).
  void copy_from(const Tensor& src);
  // Same storage, new shape with the same element count (contiguous tensors only).
  Tensor reshape(const Shape& shape) const;

  std::string describe() const;  // "bf16[16384, 4096] on cuda:0"

 private:
  std::shared_ptr<void> storage_;
  TensorView view_{};
  bool defined_ = false;
};

std::string shape_to_string(const int64_t* shape, int rank);
std::string describe(const TensorView& v);

}  // namespace fk
