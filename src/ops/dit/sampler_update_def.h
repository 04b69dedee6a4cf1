// The definition shared by the samplers' in-place updates of the latents, sample =
// f(sample, model_output) element for element (flow_match_euler_step, ddim_step): the two
// [tokens, hidden] tensors, their random case with the op's scalar arguments read from the
// workload, the cost, the edge workloads, and the CPU baseline around the op's reference.
#pragma once
#include <string>

#include "fk/element.h"
#include "ops/dit/dit_defs.h"

namespace fk::ops {

// Args has `sample` (inout) and `model_output` (in). `scalars(args, workload)` sets the op's
// scalar arguments from a workload (with defaults), `workload_scalars(args)` gives them back.
template <class Args>
OpDef sampler_update_def(const char* summary, double flops_per_element, void (*scalars)(Args&, const Json&),
                         Json (*workload_scalars)(const Args&)) {
  OpDef d;
  d.name = Args::kName;
  d.family = "dit";
  d.level = "L1";
  d.summary = summary;
  d.args_size = sizeof(Args);
  d.tensor_args = {{"sample", ArgRole::inout, offsetof(Args, sample), RowStride::any},
                   {"model_output", ArgRole::in, offsetof(Args, model_output), RowStride::any}};
  d.make_case = [layout = d.tensor_args, scalars](const Json& w, uint64_t seed) {
    const DitShape s = dit_shape(w, Args::kName);
    OpCase c = begin_case<Args>(w, 2);
    c.tensors[0] = random_tensor({s.tokens, s.hidden}, s.dtype, seed, 1, -3.f, 3.f);
    c.tensors[1] = random_tensor({s.tokens, s.hidden}, s.dtype, seed, 2, -3.f, 3.f);
    scalars(c.as<Args>(), w);
    c.bind(layout);
    return c;
  };
  d.cost = [flops_per_element](const OpCase& c) {
    const auto& a = c.as<Args>();
    const double n = static_cast<double>(a.sample.numel()), es = static_cast<double>(a.sample.element_size());
    return OpCost{3.0 * n * es, flops_per_element * n, DType::f32};  // sample read and written, model_output read
  };
  d.test_workloads = dit_test_workloads();
  d.workload_from_call = [workload_scalars](const void* args) {
    const auto& a = *static_cast<const Args*>(args);
    Json j = workload_scalars(a);
    j["tokens"] = a.sample.shape[0];
    j["hidden"] = a.sample.shape[1];
    j["dtype"] = std::string(dtype_name(a.model_output.dtype));
    return j;
  };
  return d;
}

}  // namespace fk::ops
