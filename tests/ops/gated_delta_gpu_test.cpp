// The gated delta rule's CUDA baselines beyond the generic GPU oracle tests (which run every
// test workload, row-strided views included): production head sizes (K = V = 128, 32 value
// heads on 16 key heads) against the f64 oracle; both kernels at the production (bench)
// shapes against the f64 GPU reference and each other, with their times printed; a prefill split in two
// chunked calls, and a chunked prefill followed by recurrent decode steps, equal to one
// chunked call over all the tokens (the state carried in its slot on the device).
#include <gtest/gtest.h>

#include <cstdio>

#include "fk/ops/gated_delta.h"
#include "harness/check/gpu_oracle.h"
#include "harness/check/op_check.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::ChunkGatedDeltaRuleArgs;
using ops::FusedRecurrentGatedDeltaRuleArgs;
using ops::GatedDeltaRuleArgs;

const OpDef& chunk_def() { return OpRegistry::global().def(ChunkGatedDeltaRuleArgs::kName); }
const OpDef& recurrent_def() { return OpRegistry::global().def(FusedRecurrentGatedDeltaRuleArgs::kName); }

Json qwen3_next(Json w) {
  w["hk"] = 16, w["hv"] = 32, w["dk"] = 128, w["dv"] = 128;
  return w;
}

TEST(GatedDeltaGpu, ProductionHeadsAgainstOracle) {
  FK_REQUIRE_GPU();
  const Json workloads[] = {
      qwen3_next({{"seq_lens", {1, 63, 64, 65, 200, 700}}, {"initial", "mixed"}}),
      qwen3_next({{"batch", 24}, {"seq_len", 1}}),
      qwen3_next({{"batch", 5}, {"seq_len", 3}}),
      qwen3_next({{"seq_lens", {300}}, {"dtype", "f32"}, {"beta_dtype", "f32"}}),
  };
  for (const OpDef* def : {&chunk_def(), &recurrent_def()})
    for (const Json& w : workloads) {
      const uint64_t seed = test::seed_for("gated_delta_gpu_prod" + def->name + w.dump());
      const auto r = bench::check_op(*def, w, seed, DeviceType::cuda);
      EXPECT_TRUE(r.passed) << def->name << " " << w.dump() << " seed " << seed << ": " << r.message;
    }
}

fk_status call(const OpDef& def, const GatedDeltaRuleArgs& a) {
  return OpRegistry::global().baseline(def.name, DeviceType::cuda)(&a, nullptr);
}

void expect_near(const OpDef& def, const OpCase& host, const Tensor& x, const Tensor& y, size_t arg, double factor,
                 const std::string& what) {
  Tolerance tol = def.tolerance(host, def.tensor_args[arg], x.dtype());
  tol.atol *= factor, tol.rtol *= factor;
  const Tensor hx = x.to(Device::cpu()), hy = y.to(Device::cpu());
  const bench::OutputError e = bench::compare_output(def.tensor_args[arg].name, hx, hy, tol);
  EXPECT_EQ(e.num_bad, 0) << what << ": " << bench::describe_output_error(e);
  EXPECT_EQ(test::count_nonfinite(hx), 0) << what;
}

// Both kernels at the production shapes of both (prefill and decode) against the f64 GPU
// reference (the oracle the harness uses where the CPU one is too slow), and against each
// other; their times printed.
TEST(GatedDeltaGpu, BenchShapesAgainstGpuReference) {
  FK_REQUIRE_GPU();
  std::vector<Json> workloads = chunk_def().bench_workloads;
  for (const Json& w : recurrent_def().bench_workloads) workloads.push_back(w);
  for (const Json& w : workloads) {
    SCOPED_TRACE(w.dump());
    const OpCase host = chunk_def().make_case(w, test::seed_for("gated_delta_gpu_bench" + w.dump()));
    OpCase chunk = bench::case_to_device(chunk_def(), host, Device::cuda());
    OpCase rec = bench::case_to_device(recurrent_def(), host, Device::cuda());
    const OpCase oracle = bench::run_gpu_oracle(chunk_def(), host, chunk, nullptr);
    bench::poison_outputs(chunk_def(), chunk);
    bench::poison_outputs(recurrent_def(), rec);
    ASSERT_EQ(call(chunk_def(), chunk.as<GatedDeltaRuleArgs>()), FK_OK) << last_error_message();
    ASSERT_EQ(call(recurrent_def(), rec.as<GatedDeltaRuleArgs>()), FK_OK) << last_error_message();
    rt::device_synchronize();
    expect_near(chunk_def(), host, chunk.tensors[0], oracle.tensors[0], 0, 1, "chunked o");
    expect_near(chunk_def(), host, chunk.tensors[1], oracle.tensors[1], 1, 1, "chunked state");
    expect_near(recurrent_def(), host, rec.tensors[0], oracle.tensors[0], 0, 1, "recurrent o");
    expect_near(recurrent_def(), host, rec.tensors[1], oracle.tensors[1], 1, 1, "recurrent state");
    expect_near(chunk_def(), host, chunk.tensors[0], rec.tensors[0], 0, 2, "chunked against recurrent o");
    // Times of further calls (each continues from the state the last one left: the same work).
    test::report_time(chunk_def(), chunk, 5);
    test::report_time(recurrent_def(), rec, 5);
  }
}

Tensor device_i32(std::initializer_list<int32_t> values) {
  Tensor t = Tensor::empty({static_cast<int64_t>(values.size())}, DType::i32);
  int64_t i = 0;
  for (int32_t x : values) t.data_as<int32_t>()[i++] = x;
  return t.to(Device::cuda());
}

TensorView rows(const TensorView& v, int64_t t0, int64_t t1) {
  TensorView r = v;
  r.data = v.element_ptr(t0 * v.strides[0]);
  r.shape[0] = t1 - t0;
  return r;
}

GatedDeltaRuleArgs tokens(const GatedDeltaRuleArgs& a, int64_t t0, int64_t t1, const Tensor& cu, const Tensor& slot) {
  GatedDeltaRuleArgs s = a;
  s.o = rows(a.o, t0, t1), s.q = rows(a.q, t0, t1), s.k = rows(a.k, t0, t1), s.v = rows(a.v, t0, t1);
  s.g = rows(a.g, t0, t1), s.beta = rows(a.beta, t0, t1);
  s.cu_seqlens = cu.view(), s.state_indices = slot.view(), s.has_initial_state = TensorView{};
  return s;
}

// One sequence of 204 tokens: the whole in one chunked call, against (a) two chunked calls
// split at a chunk boundary and off one, and (b) a chunked prefill of 200 then four recurrent
// decode steps of one token: the engine's use, the state passed through the slot.
TEST(GatedDeltaGpu, SplitCallsCarryTheStateThroughTheSlot) {
  FK_REQUIRE_GPU();
  const Json w = qwen3_next({{"seq_lens", {204}}});
  const OpCase host = chunk_def().make_case(w, test::seed_for("gated_delta_gpu_split"));
  const int32_t slot_id = host.as<GatedDeltaRuleArgs>().state_indices.ptr<int32_t>()[0];
  const Tensor slot = device_i32({slot_id});
  OpCase whole = bench::case_to_device(chunk_def(), host, Device::cuda());
  ASSERT_EQ(call(chunk_def(), whole.as<GatedDeltaRuleArgs>()), FK_OK) << last_error_message();
  for (int32_t split : {64, 65, 130}) {
    OpCase parts = bench::case_to_device(chunk_def(), host, Device::cuda());
    const auto& a = parts.as<GatedDeltaRuleArgs>();
    const Tensor cu1 = device_i32({0, split}), cu2 = device_i32({0, 204 - split});
    ASSERT_EQ(call(chunk_def(), tokens(a, 0, split, cu1, slot)), FK_OK) << last_error_message();
    ASSERT_EQ(call(chunk_def(), tokens(a, split, 204, cu2, slot)), FK_OK) << last_error_message();
    rt::device_synchronize();
    expect_near(chunk_def(), host, parts.tensors[0], whole.tensors[0], 0, 1, "o, split at " + std::to_string(split));
    expect_near(chunk_def(), host, parts.tensors[1], whole.tensors[1], 1, 1, "state, split at " + std::to_string(split));
  }
  OpCase steps = bench::case_to_device(chunk_def(), host, Device::cuda());
  const auto& a = steps.as<GatedDeltaRuleArgs>();
  const Tensor cu_prefill = device_i32({0, 200}), cu_one = device_i32({0, 1});
  ASSERT_EQ(call(chunk_def(), tokens(a, 0, 200, cu_prefill, slot)), FK_OK) << last_error_message();
  for (int64_t t = 200; t < 204; ++t)
    ASSERT_EQ(call(recurrent_def(), tokens(a, t, t + 1, cu_one, slot)), FK_OK) << last_error_message();
  rt::device_synchronize();
  expect_near(chunk_def(), host, steps.tensors[0], whole.tensors[0], 0, 1, "o, prefill then decode");
  expect_near(chunk_def(), host, steps.tensors[1], whole.tensors[1], 1, 1, "state, prefill then decode");
}

}  // namespace
}  // namespace fk
