// The row-strided check (harness/check/op_check_strided.h): the padded layouts it builds, and that
// it fails implementations that pass the contiguous check but assume packed rows: reading
// or writing with the packed row stride, writing past a row's end, touching an input's
// padding. Its messages name the argument at fault.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "harness/check/op_check.h"
#include "harness/check/op_check_strided.h"
#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/activation.h"
#include "fk/ops/norm.h"
#include "support/test_seed.h"

namespace fk::bench {
namespace {

using ops::LogitSoftcapArgs;
using ops::RmsNormArgs;

// f32 rows of 1001 elements: not a multiple of the 16-byte vector, so a kernel that
// rounds rows up to whole vectors runs past their end.
const Json kRmsNormWorkload = {{"tokens", 5}, {"hidden", 1001}, {"dtype", "f32"}};

fk_status call_rms_norm_baseline(const RmsNormArgs& a) {
  return OpRegistry::global().baseline("rms_norm", DeviceType::cpu)(&a, nullptr);
}

// Reads input as if its rows were packed.
fk_status rms_norm_ignoring_input_stride(const void* args, void*) {
  RmsNormArgs a = *static_cast<const RmsNormArgs*>(args);
  a.input.strides[0] = a.input.shape[1];
  return call_rms_norm_baseline(a);
}

// Writes out as if its rows were packed.
fk_status rms_norm_ignoring_out_stride(const void* args, void*) {
  RmsNormArgs a = *static_cast<const RmsNormArgs*>(args);
  a.out.strides[0] = a.out.shape[1];
  return call_rms_norm_baseline(a);
}

// Elements [H, end) of each row of a view, as far as its row stride leaves room: zeroes
// there are what a kernel writing whole 8-element vectors leaves past a row's end.
void zero_row_tails(const TensorView& v, int64_t end) {
  const int64_t H = v.shape[1];
  for (int64_t t = 0; t < v.shape[0]; ++t)
    for (int64_t j = H; j < std::min(end, v.strides[0]); ++j) store_element(v.element_ptr(t * v.strides[0] + j), v.dtype, 0.0);
}

fk_status rms_norm_writing_past_row_end(const void* args, void*) {
  const auto& a = *static_cast<const RmsNormArgs*>(args);
  const fk_status s = call_rms_norm_baseline(a);
  zero_row_tails(a.out, (a.out.shape[1] + 7) / 8 * 8);
  return s;
}

fk_status rms_norm_writing_input_padding(const void* args, void*) {
  const auto& a = *static_cast<const RmsNormArgs*>(args);
  const fk_status s = call_rms_norm_baseline(a);
  zero_row_tails(a.input, a.input.shape[1] + 1);
  return s;
}

fk_status logit_softcap_writing_past_row_end(const void* args, void*) {
  const auto& a = *static_cast<const LogitSoftcapArgs*>(args);
  const fk_status s = OpRegistry::global().baseline("logit_softcap", DeviceType::cpu)(&a, nullptr);
  zero_row_tails(a.logits, a.logits.shape[1] + 1);
  return s;
}

bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

// The wrong implementation passes the contiguous check and fails the strided one; returns
// the strided check's message.
std::string strided_failure(const char* op, const Json& workload, fk_op_fn wrong) {
  const OpDef& def = OpRegistry::global().def(op);
  const uint64_t seed = test::seed_for(std::string("strided_failure_") + op);
  const CheckResult packed = check_op(def, workload, seed, DeviceType::cpu, wrong);
  EXPECT_TRUE(packed.passed) << op << ": the contiguous check should pass: " << packed.message;
  const CheckResult strided = check_op_strided(def, workload, seed, DeviceType::cpu, wrong);
  EXPECT_FALSE(strided.passed) << op << ": the strided check should fail";
  return strided.message;
}

TEST(OpCheckStrided, LayoutsFollowTheDeclarations) {
  auto layouts = [](const char* op) { return row_layouts(OpRegistry::global().def(op)); };
  EXPECT_EQ(layouts("rms_norm"),
            (std::vector<RowLayout>{RowLayout::aligned, RowLayout::odd_stride, RowLayout::odd_start}));
  EXPECT_EQ(layouts("linear"), std::vector<RowLayout>{RowLayout::aligned});  // aligned16 arguments only
  EXPECT_TRUE(layouts("rope_cos_sin_cache").empty());                        // contiguous only
}

TEST(OpCheckStrided, PaddedRowsKeepTheValues) {
  Tensor t = Tensor::empty({3, 2, 5}, DType::bf16);  // rows of 10 elements (20 bytes)
  for (int64_t i = 0; i < t.numel(); ++i) store_element(t.view().element_ptr(i), t.dtype(), static_cast<double>(i));
  struct Expect {
    RowLayout layout;
    int64_t stride, start;  // elements
  };
  // Rows rounded up to 32 bytes (16 elements): + 16 bytes, + one element; the odd start is one element in.
  for (const Expect& e : {Expect{RowLayout::aligned, 24, 0}, Expect{RowLayout::odd_stride, 17, 0},
                          Expect{RowLayout::odd_start, 24, 1}}) {
    SCOPED_TRACE(std::string(row_layout_name(e.layout)));
    const RowStridedTensor s = make_row_strided(t, e.layout);
    EXPECT_EQ(s.view.strides[0], e.stride);
    EXPECT_EQ(s.view.strides[1], 5);
    EXPECT_EQ(s.view.strides[2], 1);
    EXPECT_EQ(static_cast<const char*>(s.view.data) - static_cast<const char*>(s.storage.data()), 2 * e.start);
    EXPECT_EQ(get(s.view, 2, 1, 4), 29.0);  // element 2 * 10 + 1 * 5 + 4
    EXPECT_EQ(fingerprint(contiguous_copy(s)), fingerprint(t));
    EXPECT_EQ(padding_damage(s), "");
    store_element(s.view.element_ptr(1 * e.stride + 10), s.view.dtype, 1.0);  // just past row 1
    EXPECT_TRUE(contains(padding_damage(s), "2 bytes of row padding were written (first: byte 0 past the end of row 1"))
        << padding_damage(s);
  }
}

TEST(OpCheckStrided, BaselinePasses) {
  const OpDef& def = OpRegistry::global().def("rms_norm");
  const CheckResult r = check_op_strided(def, kRmsNormWorkload, test::seed_for("strided_baseline"), DeviceType::cpu);
  EXPECT_TRUE(r.passed) << r.message;
}

TEST(OpCheckStrided, ReadingWithThePackedStrideFailsNamingTheInput) {
  const std::string m = strided_failure("rms_norm", kRmsNormWorkload, rms_norm_ignoring_input_stride);
  EXPECT_TRUE(contains(m, "output 'out':")) << m;
  EXPECT_TRUE(contains(m, "fails with only 'input' row-strided")) << m;
}

TEST(OpCheckStrided, WritingWithThePackedStrideFailsNamingTheOutput) {
  const std::string m = strided_failure("rms_norm", kRmsNormWorkload, rms_norm_ignoring_out_stride);
  EXPECT_TRUE(contains(m, "output 'out':")) << m;
  EXPECT_TRUE(contains(m, "bytes of row padding were written")) << m;
  EXPECT_TRUE(contains(m, "fails with only 'out' row-strided")) << m;
}

TEST(OpCheckStrided, WritingPastARowsEndFails) {
  const std::string m = strided_failure("rms_norm", kRmsNormWorkload, rms_norm_writing_past_row_end);
  // f32 rows of 1001 elements rounded up to 1008: 7 elements (28 bytes) past each of 5 rows
  // where the row stride leaves room (the aligned one: 1008 elements).
  EXPECT_TRUE(contains(m, "output 'out': 140 bytes of row padding were written (first: byte 0 past the end of row 0"))
      << m;
  EXPECT_TRUE(contains(m, "layout odd_stride")) << m;
  EXPECT_TRUE(contains(m, "fails with only 'out' row-strided")) << m;
  EXPECT_FALSE(contains(m, "'input' row-strided")) << m;
}

TEST(OpCheckStrided, WritingAnInputsPaddingFails) {
  const std::string m = strided_failure("rms_norm", kRmsNormWorkload, rms_norm_writing_input_padding);
  EXPECT_TRUE(contains(m, "input 'input' was modified (its row padding included)")) << m;
}

TEST(OpCheckStrided, WritingPastARowsEndInPlaceFails) {
  const std::string m =
      strided_failure("logit_softcap", Json{{"tokens", 3}, {"vocab", 1000}}, logit_softcap_writing_past_row_end);
  EXPECT_TRUE(contains(m, "output 'logits': 12 bytes of row padding were written")) << m;
}

}  // namespace
}  // namespace fk::bench
