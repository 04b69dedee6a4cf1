#include "harness/check/gpu_oracle.h"

#include "fk/element.h"
#include "fk/runtime.h"

namespace fk::bench {

namespace {


// A host copy of a float tensor's values as f64 (contiguous).
Tensor host_f64(const Tensor& t) {
  const Tensor host = t.device().is_cpu() ? t : t.to(Device::cpu());
  Tensor out = Tensor::empty(host.shape(), DType::f64);
  for (int64_t i = 0; i < host.numel(); ++i)
    out.data_as<double>()[i] = load_element(host.view().element_ptr(i), host.dtype());
  return out;
}

}  // namespace

OpCase run_gpu_oracle(const OpDef& def, const OpCase& host_case, const OpCase& device_case, void* stream) {
  const fk_op_fn reference = OpRegistry::global().gpu_reference(def.name);
  FK_CHECK(reference != nullptr, "op ", def.name, " has no GPU reference");
  OpCase g = device_case;  // shares the device inputs (and workspaces, which references do not use)
  for (size_t i = 0; i < def.tensor_args.size(); ++i) {
    const ArgRole role = def.tensor_args[i].role;
    const Tensor& h = host_case.tensors[i];
    if (!is_written(role) || !h.defined()) continue;  // undefined: an optional output left out
    const Device where = device_case.tensors[i].device();
    const bool is_float = dtype_is_float(h.dtype());
    if (role == ArgRole::inout) g.tensors[i] = (is_float ? host_f64(h) : h).to(where);
    else g.tensors[i] = Tensor::empty(h.shape(), is_float ? DType::f64 : h.dtype(), where, stream);
  }
  g.bind(def.tensor_args);

  const std::string pending = rt::take_pending_error();
  if (!pending.empty())
    FK_FAIL(FK_ERR_CUDA, "a CUDA error was pending before the GPU reference of ", def.name, ": ", pending);
  const fk_status s = reference(g.args_ptr(), stream);
  if (s != FK_OK)
    FK_FAIL(s, "the GPU reference of ", def.name, " failed with ", status_name(s), ": ", last_error_message());
  rt::stream_synchronize(stream);
  const std::string left = rt::take_pending_error();
  if (!left.empty()) FK_FAIL(FK_ERR_CUDA, "the GPU reference of ", def.name, " left a CUDA error: ", left);

  OpCase oracle = host_case;
  for (size_t i = 0; i < def.tensor_args.size(); ++i)
    if (is_written(def.tensor_args[i].role) && g.tensors[i].defined())
      oracle.tensors[i] = g.tensors[i].device().is_cpu() ? g.tensors[i] : g.tensors[i].to(Device::cpu());
  oracle.bind(def.tensor_args);
  return oracle;
}

}  // namespace fk::bench
