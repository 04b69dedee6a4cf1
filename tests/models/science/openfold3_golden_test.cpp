// OpenFold3's Pairformer stack against the PyTorch reference written from the AlphaFold3
// paper (tests/data/models/make_openfold3_goldens.py) on the CPU: the tiny config's two
// blocks on two structures of 12 tokens (one with 2 padded), real tokens compared. Skips
// while the data is absent.
#include <gtest/gtest.h>

#include "fk/runtime.h"
#include "models/science/openfold3_golden_util.h"

namespace fk::models::science {
namespace {

TEST(OpenFold3Golden, TinyMatchesPyTorchReference) {
  if (!golden::have_data())
    GTEST_SKIP() << "no golden data in " << golden::data_dir().string() << " (made by: " << golden::kScript << ")";
  golden::check(Device::cpu(), DType::f32, 1e-4);   // float32 like the reference
  golden::check(Device::cpu(), DType::bf16, 3e-2);  // the same weights and inputs, bf16 streams
}

}  // namespace
}  // namespace fk::models::science
