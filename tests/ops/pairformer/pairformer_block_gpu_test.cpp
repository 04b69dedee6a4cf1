// pairformer_block on CUDA beyond the generic GPU oracle test: the CUDA baseline is its
// seven parts called one by one on the device (bit for bit), and OpenFold3's bench shapes
// (N = 384 and 768, c_s 384, c_z 128, bf16; one with padding) run, stay finite and print
// their time.
#include <gtest/gtest.h>

#include <cstring>

#include "fk/ops/pairformer_block.h"
#include "harness/check/op_check.h"
#include "ops/norm_act_support.h"
#include "ops/pairformer/pairformer_block_parts.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::PairformerBlockArgs;

const OpDef& def() { return OpRegistry::global().def(PairformerBlockArgs::kName); }

TEST(PairformerBlockGpu, IsItsPartsOneByOne) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().test_workloads) {
    SCOPED_TRACE(w.dump());
    const OpCase host = def().make_case(w, test::seed_for("PairformerBlockGpu.Parts" + w.dump()));
    OpCase c = bench::case_to_device(def(), host, Device::cuda());
    const auto& a = c.as<PairformerBlockArgs>();
    const Tensor s = c.tensors[0].to(Device::cuda()), z = c.tensors[1].to(Device::cuda());
    test::run_pairformer_block_parts(s, z, a.single_mask, a.pair_mask, a.w, a.tri_heads, a.single_heads,
                                     test::PartsPath::registry);
    const fk_op_fn fn = OpRegistry::global().baseline(def().name, DeviceType::cuda);
    ASSERT_NE(fn, nullptr);
    ASSERT_EQ(fn(c.args_ptr(), nullptr), FK_OK) << last_error_message();
    rt::device_synchronize();
    for (const auto& [got, want] : {std::pair{c.tensors[0], s}, std::pair{c.tensors[1], z}}) {
      const Tensor g = got.to(Device::cpu()), e = want.to(Device::cpu());
      EXPECT_EQ(std::memcmp(g.data(), e.data(), static_cast<size_t>(g.view().span_bytes())), 0);
    }
  }
}

TEST(PairformerBlockGpu, BenchShapesRun) {
  FK_REQUIRE_GPU();
  for (const Json& w : def().bench_workloads) {
    SCOPED_TRACE(w.dump());
    OpCase c = def().make_case(w, test::seed_for("PairformerBlockGpu.Bench" + w.dump()));
    for (Tensor& t : c.tensors)
      if (t.defined()) t = t.to(Device::cuda());
    c.bind(def().tensor_args);
    const fk_op_fn fn = OpRegistry::global().baseline(def().name, DeviceType::cuda);
    ASSERT_NE(fn, nullptr);
    ASSERT_EQ(fn(c.args_ptr(), nullptr), FK_OK) << last_error_message();
    rt::device_synchronize();
    EXPECT_EQ(test::count_nonfinite(c.tensors[0]), 0);
    EXPECT_EQ(test::count_nonfinite(c.tensors[1]), 0);
    test::report_time(def(), c, 5);
  }
}

}  // namespace
}  // namespace fk
