#include "models/encoder/bge_m3_heads.h"

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/status.h"
#include "models/encoder/torch_state_dict.h"

namespace fk::models::encoder {
namespace {

namespace fs = std::filesystem;

// A head file's tensor (a host view in its stored dtype), checked and converted to the
// model dtype on `device`.
Tensor convert(const TensorView& src, const Shape& stored, const std::string& source, const char* name,
               const Shape& shape, DType dtype, Device device) {
  FK_CHECK(stored == shape, "BGE-M3 head file ", source, ": '", name, "' has shape ",
           shape_to_string(stored.data(), static_cast<int>(stored.size())), " but hidden size ", shape.back(),
           " implies ", shape_to_string(shape.data(), static_cast<int>(shape.size())));
  Tensor host = Tensor::empty(shape, dtype);
  const size_t in_es = src.element_size(), out_es = host.view().element_size();
  for (int64_t i = 0; i < src.numel(); ++i)
    store_element(static_cast<char*>(host.data()) + static_cast<size_t>(i) * out_es, dtype,
                  load_element(static_cast<const char*>(src.data) + static_cast<size_t>(i) * in_es, src.dtype));
  return device.is_cpu() ? host : host.to(device);
}

// One torch.nn.Linear state dict ("weight" [out, in], "bias" [out]) from `folder`/`stem`.*:
// the safetensors form where present, else the torch.save file. False when neither exists.
bool load_linear(const fs::path& folder, const char* stem, int64_t out, int64_t in, DType dtype, Device device,
                 Tensor& weight, Tensor& bias) {
  const fs::path st = folder / (std::string(stem) + ".safetensors"), pt = folder / (std::string(stem) + ".pt");
  const Shape w_shape{out, in}, b_shape{out};
  if (fs::exists(st)) {
    const safetensors::File f = safetensors::File::open(st);
    for (const char* n : {"weight", "bias"}) {
      FK_CHECK(f.contains(n), "BGE-M3 head file ", f.source(), " has no tensor '", n,
               "' (a torch.nn.Linear state dict holds 'weight' and 'bias')");
      FK_CHECK(f.info(n).dtype && dtype_is_float(*f.info(n).dtype), "BGE-M3 head file ", f.source(), ": '", n,
               "' has dtype ", f.info(n).dtype_name, "; heads load from F32, BF16 or F16");
    }
    weight = convert(f.view("weight"), f.info("weight").shape, f.source(), "weight", w_shape, dtype, device);
    bias = convert(f.view("bias"), f.info("bias").shape, f.source(), "bias", b_shape, dtype, device);
    return true;
  }
  if (!fs::exists(pt)) return false;
  const TorchStateDict d = TorchStateDict::open(pt);
  for (const char* n : {"weight", "bias"})
    FK_CHECK(d.contains(n), "BGE-M3 head file ", d.source(), " has no tensor '", n,
             "' (a torch.nn.Linear state dict holds 'weight' and 'bias')");
  const Tensor w = d.load("weight"), b = d.load("bias");
  weight = convert(w.view(), w.shape(), d.source(), "weight", w_shape, dtype, device);
  bias = convert(b.view(), b.shape(), d.source(), "bias", b_shape, dtype, device);
  return true;
}

}  // namespace

BgeM3HeadWeights load_bge_m3_heads(const fs::path& folder, int64_t hidden, DType dtype, Device device) {
  BgeM3HeadWeights heads;
  const bool sparse = load_linear(folder, "sparse_linear", 1, hidden, dtype, device, heads.sparse, heads.sparse_bias);
  const bool colbert =
      load_linear(folder, "colbert_linear", hidden, hidden, dtype, device, heads.colbert, heads.colbert_bias);
  FK_CHECK(sparse == colbert, "BGE-M3 heads in ", folder.string(), ": ", sparse ? "sparse_linear" : "colbert_linear",
           " is there but ", sparse ? "colbert_linear" : "sparse_linear", " is missing; the heads come as a pair");
  if (!sparse) heads = BgeM3HeadWeights{};
  return heads;
}

}  // namespace fk::models::encoder
