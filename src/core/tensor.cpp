#include "fk/tensor.h"

#include <cstdlib>
#include <cstring>

#include "fk/runtime.h"
#include "fk/status.h"

namespace fk {

TensorView make_view(void* data, const int64_t* shape, int rank, DType dtype, Device device) {
  FK_CHECK(rank >= 0 && rank <= kMaxRank, "rank ", rank, " is outside [0, ", kMaxRank, "]");
  TensorView v;
  v.data = data;
  v.rank = rank;
  v.dtype = dtype;
  v.device = device;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    FK_CHECK(shape[i] >= 0, "negative dimension ", shape[i], " at axis ", i);
    v.shape[i] = shape[i];
    v.strides[i] = stride;
    stride *= shape[i];
  }
  return v;
}

TensorView make_view(void* data, std::initializer_list<int64_t> shape, DType dtype, Device device) {
  return make_view(data, shape.begin(), static_cast<int>(shape.size()), dtype, device);
}

std::string shape_to_string(const int64_t* shape, int rank) {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string describe(const TensorView& v) {
  return concat(dtype_name(v.dtype), shape_to_string(v.shape, v.rank), " on ",
                v.device.is_cpu() ? "cpu" : "cuda:" + std::to_string(v.device.index));
}

std::string Tensor::describe() const { return fk::describe(view_); }

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device, void* stream) {
  FK_CHECK(dtype_is_valid(dtype), "invalid dtype ", static_cast<int>(dtype));
  Tensor t;
  t.view_ = make_view(nullptr, shape.data(), static_cast<int>(shape.size()), dtype, device);
  t.defined_ = true;
  // Allocate at least one byte so that data() of an empty tensor is still a unique,
  // valid pointer (kernels may receive it; nothing may be read through it).
  const size_t bytes = std::max<size_t>(1, static_cast<size_t>(t.view_.nbytes()));
  if (device.is_cpu()) {
    const size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) FK_FAIL(FK_ERR_OUT_OF_MEMORY, "host allocation of ", bytes, " bytes failed");
    t.storage_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  } else {
    void* p = rt::device_malloc(bytes, device.index, stream);
    t.storage_ = std::shared_ptr<void>(p, [stream](void* q) { rt::device_free(q, stream); });
  }
  t.view_.data = t.storage_.get();
  return t;
}

Tensor Tensor::empty_pinned(const Shape& shape, DType dtype) {
  FK_CHECK(dtype_is_valid(dtype), "invalid dtype ", static_cast<int>(dtype));
  Tensor t;
  t.view_ = make_view(nullptr, shape.data(), static_cast<int>(shape.size()), dtype, Device::cpu());
  t.defined_ = true;
  void* p = rt::host_pinned_malloc(std::max<size_t>(1, static_cast<size_t>(t.view_.nbytes())));
  t.storage_ = std::shared_ptr<void>(p, [](void* q) { rt::host_pinned_free(q); });
  t.view_.data = t.storage_.get();
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device, void* stream) {
  Tensor t = empty(shape, dtype, device, stream);
  if (device.is_cpu()) {
    std::memset(t.data(), 0, t.nbytes());
  } else {
    rt::memset_async(t.data(), 0, t.nbytes(), device, stream);
    rt::stream_synchronize(stream);
  }
  return t;
}

Tensor Tensor::to(Device device) const {
  FK_CHECK(defined_, "to() on an undefined tensor");
  FK_CHECK(view_.is_contiguous(), "to() needs a contiguous tensor, got ", describe());
  Tensor out = empty(shape(), dtype(), device);
  if (nbytes() > 0) rt::memcpy_sync(out.data(), device, data(), this->device(), nbytes());
  return out;
}

void Tensor::copy_from(const Tensor& src) {
  FK_CHECK(shape() == src.shape() && dtype() == src.dtype(), "copy_from: ", describe(), " <- ",
           src.describe());
  FK_CHECK(view_.is_contiguous() && src.view_.is_contiguous(), "copy_from needs contiguous tensors");
  if (nbytes() > 0) rt::memcpy_sync(data(), device(), src.data(), src.device(), nbytes());
}

Tensor Tensor::reshape(const Shape& new_shape) const {
  FK_CHECK(view_.is_contiguous(), "reshape needs a contiguous tensor, got ", describe());
  Tensor t = *this;
  t.view_ = make_view(view_.data, new_shape.data(), static_cast<int>(new_shape.size()), dtype(), device());
  FK_CHECK(t.numel() == numel(), "reshape of ", describe(), " to ",
           shape_to_string(new_shape.data(), static_cast<int>(new_shape.size())), " changes the element count");
  return t;
}

}  // namespace fk
