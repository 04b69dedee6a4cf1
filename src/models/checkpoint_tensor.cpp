#include "models/checkpoint_tensor.h"

#include "fk/element.h"
#include "fk/status.h"

namespace fk::models {

TensorView checked_float_tensor(const safetensors::Checkpoint& ckpt, const std::string& name, const Shape& shape,
                                std::string_view needed_by) {
  if (!ckpt.contains(name))
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "checkpoint ", ckpt.path().string(), " has no tensor '", name, "', which ",
            needed_by, " needs");
  const safetensors::TensorInfo& info = ckpt.info(name);
  FK_CHECK(info.shape == shape, "checkpoint tensor '", name, "' has shape ",
           shape_to_string(info.shape.data(), static_cast<int>(info.shape.size())), " but the config implies ",
           shape_to_string(shape.data(), static_cast<int>(shape.size())));
  FK_CHECK(info.dtype && dtype_is_float(*info.dtype), "checkpoint tensor '", name, "' has dtype ", info.dtype_name,
           "; weights load from F32, BF16 or F16");
  return ckpt.view(name);
}

void convert_rows(const TensorView& src, Tensor& dst, int64_t row) {
  const int64_t n = src.numel(), row_elems = dst.rank() == 1 ? 1 : dst.size(1);
  const size_t es = dst.view().element_size(), in_es = src.element_size();
  auto* out = static_cast<char*>(dst.data()) + static_cast<size_t>(row * row_elems) * es;
  const auto* in = static_cast<const char*>(src.data);
  for (int64_t i = 0; i < n; ++i)
    store_element(out + static_cast<size_t>(i) * es, dst.dtype(),
                  load_element(in + static_cast<size_t>(i) * in_es, src.dtype));
}

Tensor read_f32_tensor(const safetensors::Checkpoint& ckpt, const std::string& name, const Shape& shape,
                       std::string_view needed_by) {
  Tensor t = Tensor::empty(shape, DType::f32);
  convert_rows(checked_float_tensor(ckpt, name, shape, needed_by), t);
  return t;
}

void expect_source_tensor(const Tensor& t, const std::string& name, const Shape& shape, std::string_view model) {
  FK_CHECK(t.defined() && t.shape() == shape && t.dtype() == DType::f32 && t.device().is_cpu(), model,
           ": weight source gave ", t.defined() ? t.describe() : std::string("nothing"), " for '", name,
           "', expected f32", shape_to_string(shape.data(), static_cast<int>(shape.size())), " on the host");
}

Tensor f32_to_model(const Tensor& f32, DType dtype, Device device) {
  Tensor out = Tensor::empty(f32.shape(), dtype);
  convert_rows(f32.view(), out);
  return device.is_cpu() ? out : out.to(device);
}

}  // namespace fk::models
