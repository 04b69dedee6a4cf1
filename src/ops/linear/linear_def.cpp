// linear: definition (workloads, inputs, cost, tolerance) and CPU reference.
#include <algorithm>
#include <vector>

#include "fk/element.h"
#include "fk/ops/linear.h"
#include "ops/common/case_builder.h"
#include "ops/linear/linear_reference.h"
#include "ops/linear/linear_tolerance.h"
#include "ops/linear/linear_validate.h"

namespace fk::ops {
namespace {

constexpr const char* kOp = LinearArgs::kName;

fk_status linear_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const LinearArgs*>(args);
    validate_linear(a);
    expect_linear_device(a, DeviceType::cpu);
    linear_reference(a);
  });
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const LinearArgs*>(args);
  Json w = {{"m", a.input.shape[0]}, {"n", a.weight.shape[0]}, {"k", a.weight.shape[1]},
            {"dtype", std::string(dtype_name(a.input.dtype))}};
  if (a.out.dtype != a.input.dtype) w["out_dtype"] = std::string(dtype_name(a.out.dtype));  // fp8 input
  if (arg_present(a.bias)) w["bias"] = true;
  return w;
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "linear";
  d.level = "L1";
  d.summary = "out[M, N] = input[M, K] @ weight[N, K]^T (+ bias); bf16/f16, or fp8 with per-tensor scales";
  d.args_size = sizeof(LinearArgs);
  // Row-strided input, weight and out (slices of wider buffers); 16-byte aligned rows only:
  // the CUDA baseline's fp8 path (cuBLASLt) declines any other layout.
  d.tensor_args = {{"out", ArgRole::out, offsetof(LinearArgs, out), RowStride::aligned16},
                   {"input", ArgRole::in, offsetof(LinearArgs, input), RowStride::aligned16},
                   {"weight", ArgRole::in, offsetof(LinearArgs, weight), RowStride::aligned16},
                   {"bias", ArgRole::in, offsetof(LinearArgs, bias)},
                   {"scale_a", ArgRole::in, offsetof(LinearArgs, scale_a)},
                   {"scale_b", ArgRole::in, offsetof(LinearArgs, scale_b)}};
  // Workload fields: m, n, k; dtype (bf16 | f16 | f8e4m3fn, default bf16); bias (bool);
  // out_dtype (fp8 only: bf16 | f16, default bf16).
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const int64_t M = wl_int(w, "m"), N = wl_int(w, "n"), K = wl_int(w, "k");
    FK_CHECK(M >= 0 && N >= 0 && K > 0, "linear workload needs m >= 0, n >= 0, k > 0, got ", w.dump());
    const DType dt = wl_dtype(w);
    FK_CHECK(dt == DType::bf16 || dt == DType::f16 || dt == DType::f8e4m3fn,
             "linear workload dtype must be bf16, f16 or f8e4m3fn, got ", w.dump());
    const bool fp8 = dt == DType::f8e4m3fn;
    const DType out_dt = fp8 ? wl_dtype(w, "out_dtype", DType::bf16) : dt;
    const float range = fp8 ? 2.f : 1.f;  // fp8 values spread over several binades
    OpCase c = begin_case<LinearArgs>(w, 6);
    c.tensors[0] = Tensor::empty({M, N}, out_dt);
    c.tensors[1] = random_tensor({M, K}, dt, seed, 1, -range, range);
    c.tensors[2] = random_tensor({N, K}, dt, seed, 2, -range, range);
    c.tensors[3] = wl_bool(w, "bias", false) ? random_tensor({N}, out_dt, seed, 3, -1.f, 1.f) : absent_tensor(out_dt);
    c.tensors[4] = fp8 ? random_tensor({1}, DType::f32, seed, 4, 0.25f, 2.f) : absent_tensor(DType::f32);
    c.tensors[5] = fp8 ? random_tensor({1}, DType::f32, seed, 5, 0.25f, 2.f) : absent_tensor(DType::f32);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<LinearArgs>();
    const double M = static_cast<double>(a.input.shape[0]), K = static_cast<double>(a.input.shape[1]);
    const double N = static_cast<double>(a.weight.shape[0]);
    const double bytes = static_cast<double>(a.input.nbytes() + a.weight.nbytes() + a.out.nbytes()) +
                         (arg_present(a.bias) ? static_cast<double>(a.bias.nbytes()) : 0.0);
    return OpCost{bytes, 2.0 * M * N * K, a.input.dtype};
  };
  d.tolerance = [](const OpCase& c, const TensorArg&, DType dt) { return linear_tolerance(c.as<LinearArgs>(), dt); };

  using J = Json;
  d.test_workloads = {
      J{{"m", 1}, {"n", 64}, {"k", 64}},
      J{{"m", 3}, {"n", 100}, {"k", 72}, {"bias", true}},  // N, K not multiples of 16
      J{{"m", 17}, {"n", 200}, {"k", 33}},                 // odd K: 2-byte aligned rows
      J{{"m", 17}, {"n", 96}, {"k", 128}, {"dtype", "f16"}, {"bias", true}},
      J{{"m", 128}, {"n", 256}, {"k", 512}, {"bias", true}},
      J{{"m", 256}, {"n", 512}, {"k", 512}},
      J{{"m", 0}, {"n", 64}, {"k", 64}},  // no tokens
      // One output feature, a [M, 1] column (Qwen2-MoE's shared-expert gate logit): through
      // the FMA decode kernel, the tensor-core one and cuBLASLt.
      J{{"m", 1}, {"n", 1}, {"k", 2048}},
      J{{"m", 9}, {"n", 1}, {"k", 64}},
      J{{"m", 40}, {"n", 1}, {"k", 128}},
      // Decode shapes (on CUDA the weight-streaming kernels: FMA up to 4 rows, tensor cores
      // up to 16; cuBLASLt beyond): K tails shorter than a warp's sweep, N not a multiple of
      // the rows per warp, f16, bias, the two halves of the 16-row tensor-core operand.
      J{{"m", 2}, {"n", 37}, {"k", 1288}},
      J{{"m", 4}, {"n", 4301}, {"k", 520}, {"bias", true}},  // three weight rows per warp (wide on an H100)
      J{{"m", 5}, {"n", 130}, {"k", 520}, {"dtype", "f16"}, {"bias", true}},
      J{{"m", 8}, {"n", 96}, {"k", 4104}, {"bias", true}},
      J{{"m", 7}, {"n", 33}, {"k", 8}},
      J{{"m", 16}, {"n", 41}, {"k", 360}, {"bias", true}},
      J{{"m", 11}, {"n", 24}, {"k", 1048}, {"dtype", "f16"}},
      J{{"m", 1}, {"n", 64}, {"k", 128}, {"dtype", "f8e4m3fn"}},
      J{{"m", 3}, {"n", 48}, {"k", 96}, {"dtype", "f8e4m3fn"}, {"bias", true}},
      J{{"m", 17}, {"n", 80}, {"k", 256}, {"dtype", "f8e4m3fn"}, {"out_dtype", "f16"}},
      J{{"m", 128}, {"n", 256}, {"k", 512}, {"dtype", "f8e4m3fn"}, {"bias", true}},
  };
  // 8192^3, then the Llama-3.1-8B layer GEMMs (qkv, o, gate_up, down) over decode and
  // prefill token counts, and its LM head at decode batches 1, 8, 16; fp8 at the prefill
  // size.
  d.bench_workloads.push_back(J{{"m", 8192}, {"n", 8192}, {"k", 8192}});
  d.bench_workloads.push_back(J{{"m", 8192}, {"n", 8192}, {"k", 8192}, {"dtype", "f8e4m3fn"}});
  const int64_t layer_nk[4][2] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}};
  for (int64_t m : {1, 4, 8, 16, 64, 256, 4096, 16384})
    for (const auto& nk : layer_nk) d.bench_workloads.push_back(J{{"m", m}, {"n", nk[0]}, {"k", nk[1]}});
  for (int64_t m : {1, 8, 16})  // the LM head of a decode step
    d.bench_workloads.push_back(J{{"m", m}, {"n", 128256}, {"k", 4096}});
  for (const auto& nk : layer_nk)
    d.bench_workloads.push_back(J{{"m", 4096}, {"n", nk[0]}, {"k", nk[1]}, {"dtype", "f8e4m3fn"}});
  d.workload_from_call = workload_from_call;
  d.architectures = {"llama",  "mistral", "qwen2",     "qwen3",     "gemma", "gemma2",
                     "gemma3", "mixtral", "qwen3_moe", "qwen2_moe", "olmoe"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("linear", cpu, linear_cpu);

}  // namespace
}  // namespace fk::ops
