#include "models/step_io.h"

#include <cstring>

#include "fk/runtime.h"
#include "fk/status.h"

namespace fk::models {

TensorView step_input(const StepInputs& in, const char* name, bool required, std::string_view model) {
  for (const auto& [n, v] : in.tensors)
    if (n == name) return v;
  FK_CHECK(!required, model, ": step input '", name, "' is missing");
  return TensorView{};
}

void upload_to(const Tensor& dst, const void* src, size_t bytes, void* stream, std::string_view model) {
  FK_CHECK(bytes <= dst.nbytes(), model, ": internal: upload of ", bytes, " bytes into a ", dst.nbytes(),
           "-byte buffer");
  if (bytes == 0) return;
  if (dst.device().is_cpu())
    std::memcpy(dst.data(), src, bytes);
  else
    rt::memcpy_async(dst.data(), dst.device(), src, Device::cpu(), bytes, stream);
}

}  // namespace fk::models
