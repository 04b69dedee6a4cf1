// The OpenFold3 golden check shared by the CPU and GPU golden tests: the tiny Pairformer
// stack of tests/data/models/openfold3 (made by make_openfold3_goldens.py, the stack written
// from the AlphaFold3 paper in PyTorch) loaded from its checkpoint, run on the golden s, z
// and masks, its real tokens' outputs compared with the reference's by relative L2 error.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/runtime.h"
#include "models/registry.h"
#include "models/science/openfold3/openfold3_model.h"

namespace fk::models::science::golden {

inline std::filesystem::path data_dir() { return std::filesystem::path(FK_SOURCE_DIR) / "tests/data/models/openfold3"; }

inline bool have_data() { return std::filesystem::exists(data_dir() / "golden.safetensors"); }

inline const char* kScript = "python3 tests/data/models/make_openfold3_goldens.py tests/data/models";

// A golden tensor (f32) in `dtype` on `device`.
inline Tensor golden_as(const safetensors::File& f, const std::string& name, DType dtype, Device device) {
  const TensorView v = f.view(name);
  Tensor t = Tensor::empty(Shape(v.shape, v.shape + v.rank), dtype);
  for (int64_t i = 0; i < t.numel(); ++i)
    store_element(static_cast<char*>(t.data()) + i * t.view().element_size(), dtype,
                  load_element(static_cast<const char*>(v.data) + i * v.element_size(), v.dtype));
  return device.is_cpu() ? t : t.to(device);
}

// Relative L2 error of the real tokens' rows (s) and pairs (z).
inline void check(Device device, DType dtype, double bound) {
  const safetensors::File f = safetensors::File::open(data_dir() / "golden.safetensors");
  const std::unique_ptr<Model> m = create_model(data_dir().string());
  auto& model = dynamic_cast<OpenFold3Model&>(*m);
  const TensorView mask = f.view("single_mask");
  LoadOptions lo;
  lo.device = device;
  lo.dtype = dtype;
  lo.checkpoint = data_dir();
  lo.max_seqs = mask.shape[0];
  model.load(lo);
  const Tensor s = golden_as(f, "s_in", dtype, device), z = golden_as(f, "z_in", dtype, device);
  const Tensor sm = golden_as(f, "single_mask", dtype, device), pm = golden_as(f, "pair_mask", dtype, device);
  StepInputs in;
  in.tensors = {{"single", s.view()}, {"pair", z.view()}, {"single_mask", sm.view()}, {"pair_mask", pm.view()}};
  model.plan(in, nullptr);
  model.forward(in, nullptr);
  const Tensor s_out = Tensor(golden_as(f, "s_out", DType::f32, Device::cpu()));
  const Tensor z_out = Tensor(golden_as(f, "z_out", DType::f32, Device::cpu()));
  const TensorView so = model.single_output(), zo = model.pair_output();
  Tensor hs = Tensor::empty(Shape(so.shape, so.shape + so.rank), dtype);
  Tensor hz = Tensor::empty(Shape(zo.shape, zo.shape + zo.rank), dtype);
  rt::memcpy_sync(hs.data(), Device::cpu(), so.data, so.device, static_cast<size_t>(so.span_bytes()));
  rt::memcpy_sync(hz.data(), Device::cpu(), zo.data, zo.device, static_cast<size_t>(zo.span_bytes()));
  const int64_t B = so.shape[0], N = so.shape[1], Cs = so.shape[2], Cz = zo.shape[3];
  double ds = 0, ns = 0, dz = 0, nz = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < N; ++i) {
      if (get(mask, b, i) == 0) continue;
      for (int64_t c = 0; c < Cs; ++c) {
        const double r = get(s_out.view(), b, i, c), g = get(hs.view(), b, i, c);
        ds += (g - r) * (g - r), ns += r * r;
      }
      for (int64_t j = 0; j < N; ++j) {
        if (get(mask, b, j) == 0) continue;
        for (int64_t c = 0; c < Cz; ++c) {
          const double r = get(z_out.view(), b, i, j, c), g = get(hz.view(), b, i, j, c);
          dz += (g - r) * (g - r), nz += r * r;
        }
      }
    }
  std::printf("[ golden ] openfold3 %s on %s: relative L2 error single %.3g, pair %.3g (bound %.3g)\n",
              std::string(dtype_name(dtype)).c_str(), device.is_cpu() ? "cpu" : "cuda", std::sqrt(ds / ns),
              std::sqrt(dz / nz), bound);
  EXPECT_GT(ns, 0);
  EXPECT_GT(nz, 0);
  EXPECT_LE(std::sqrt(ds / ns), bound) << "single, " << dtype_name(dtype);
  EXPECT_LE(std::sqrt(dz / nz), bound) << "pair, " << dtype_name(dtype);
}

}  // namespace fk::models::science::golden
