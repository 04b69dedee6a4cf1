// A fused op in the registry: it runs its own implementation, and its composed form (its
// parts called through the registry) when one of the ops it covers has a candidate or its
// "unfused" variant is selected; a candidate for the fused op itself always runs. The ops
// here are small ones of the test's own, in a registry of their own.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fk/op_registry.h"
#include "fk/status.h"

namespace fk {
namespace {

constexpr DeviceType kCpu = DeviceType::cpu;

struct TraceArgs {
  int32_t unused = 0;
};

// What ran, in order.
std::vector<std::string>& trace() {
  static std::vector<std::string> t;
  return t;
}
// The registry the composed form calls (the test's, not the global one).
OpRegistry* composed_registry = nullptr;

template <const char* kWhat>
fk_status record(const void*, void*) {
  trace().push_back(kWhat);
  return FK_OK;
}
constexpr char kFusedBaseline[] = "fused baseline", kFusedCandidate[] = "fused candidate";
constexpr char kScaleBaseline[] = "scale baseline", kScaleCandidate[] = "scale candidate";
constexpr char kShiftBaseline[] = "shift baseline", kShiftCandidate[] = "shift candidate";

fk_status fused_as_parts(const void* args, void* stream) {
  return op_guard([&] {
    composed_registry->call("test_scale", kCpu, args, stream);
    composed_registry->call("test_shift", kCpu, args, stream);
  });
}

fk_status failing(const void*, void*) {
  return op_guard([] { FK_FAIL(FK_ERR_INVALID_ARGUMENT, "the shift candidate refuses"); });
}

OpDef test_def(const char* name) {
  OpDef d;
  d.name = name;
  d.family = "test";
  d.args_size = sizeof(TraceArgs);
  d.make_case = [](const Json&, uint64_t) { return OpCase{}; };
  return d;
}

class FusedOpInRegistry : public testing::Test {
 protected:
  void SetUp() override {
    composed_registry = &reg;
    reg.define(test_def("test_scale"));
    reg.define(test_def("test_shift"));
    OpDef fused = test_def("test_scale_shift");
    fused.level = "L2";
    fused.covers = {"test_scale", "test_shift"};
    fused.composed[static_cast<int>(kCpu)] = fused_as_parts;
    reg.define(std::move(fused));
    reg.set_baseline("test_scale", kCpu, record<kScaleBaseline>);
    reg.set_baseline("test_shift", kCpu, record<kShiftBaseline>);
    reg.set_baseline("test_scale_shift", kCpu, record<kFusedBaseline>);
    reg.define_variant("test_scale_shift", "unfused", "its parts");
  }
  void TearDown() override { composed_registry = nullptr; }
  std::vector<std::string> run_fused() {
    trace().clear();
    const TraceArgs args;
    reg.call("test_scale_shift", kCpu, &args, nullptr);
    return trace();
  }
  OpRegistry reg;
};

using Trace = std::vector<std::string>;

TEST_F(FusedOpInRegistry, RunsItsOwnImplementationUntilAPartHasACandidate) {
  EXPECT_EQ(run_fused(), Trace{kFusedBaseline});
  reg.install("test_shift", kCpu, record<kShiftCandidate>, "test candidate");
  EXPECT_EQ(run_fused(), (Trace{kScaleBaseline, kShiftCandidate}));
  reg.reset("test_shift", kCpu);
  EXPECT_EQ(run_fused(), Trace{kFusedBaseline});
  reg.install("test_scale", kCpu, record<kScaleCandidate>, "test candidate");
  EXPECT_EQ(run_fused(), (Trace{kScaleCandidate, kShiftBaseline}));
  reg.reset("test_scale", kCpu);
  EXPECT_EQ(run_fused(), Trace{kFusedBaseline});
}

TEST_F(FusedOpInRegistry, ACandidateForTheFusedOpItselfWins) {
  reg.install("test_scale", kCpu, record<kScaleCandidate>, "test candidate");
  reg.install("test_scale_shift", kCpu, record<kFusedCandidate>, "test candidate");
  EXPECT_EQ(run_fused(), Trace{kFusedCandidate});
  reg.select_variants("test_scale_shift", {"unfused"});
  EXPECT_EQ(run_fused(), Trace{kFusedCandidate});
  reg.reset("test_scale_shift", kCpu);
  EXPECT_EQ(run_fused(), (Trace{kScaleCandidate, kShiftBaseline}));
}

TEST_F(FusedOpInRegistry, TheUnfusedVariantRunsTheParts) {
  reg.select_variants("test_scale_shift", {"unfused"});
  EXPECT_EQ(run_fused(), (Trace{kScaleBaseline, kShiftBaseline}));
  reg.select_variants("test_scale_shift", {});
  EXPECT_EQ(run_fused(), Trace{kFusedBaseline});
}

TEST_F(FusedOpInRegistry, TheObserverSeesThePartsThatRan) {
  std::vector<std::string> observed;
  reg.set_call_observer([&](const OpDef& def, DeviceType, const void*, double) { observed.push_back(def.name); });
  run_fused();
  EXPECT_EQ(observed, Trace{"test_scale_shift"});
  observed.clear();
  reg.install("test_shift", kCpu, record<kShiftCandidate>, "test candidate");
  run_fused();
  EXPECT_EQ(observed, (Trace{"test_scale", "test_shift"}));
  reg.set_call_observer(nullptr);
}

TEST_F(FusedOpInRegistry, AFailingPartNamesTheFusedOpAndThePart) {
  reg.install("test_shift", kCpu, failing, "refusing candidate");
  try {
    run_fused();
    FAIL() << "the failing part did not fail the call";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("test_scale_shift"), std::string::npos) << what;
    EXPECT_NE(what.find("test_shift"), std::string::npos) << what;
    EXPECT_NE(what.find("refuses"), std::string::npos) << what;
  }
}

TEST_F(FusedOpInRegistry, APartCandidateWithoutAComposedFormIsAnError) {
  reg.install("test_scale", DeviceType::cuda, record<kScaleCandidate>, "test candidate");
  const TraceArgs args;
  try {
    reg.call("test_scale_shift", DeviceType::cuda, &args, nullptr);
    FAIL() << "the fused op ran without its composed form";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("composed form"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fk
