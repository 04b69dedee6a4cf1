// Every op that can be captured gives back the workload it was made from: make_case(test
// workload), then workload_from_call on its arguments, names the same values for the
// fields both spell out, and instantiates a case with the same tensors (shapes and dtypes).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "fk/op_registry.h"
#include "fk/status.h"
#include "support/test_seed.h"

namespace fk {
namespace {

bool same_value(const Json& a, const Json& b) {
  if (a.is_number() && b.is_number()) {  // a float field comes back through a float argument
    const double x = a.get<double>(), y = b.get<double>();
    return std::abs(x - y) <= 1e-6 * std::max(std::abs(x), std::abs(y));
  }
  return a == b;
}

std::string tensor_summary(const Tensor& t) {
  if (!t.defined()) return "undefined";
  const TensorView v = t.view();
  return concat(dtype_name(v.dtype), shape_to_string(v.shape, v.rank));
}

TEST(WorkloadRoundTrip, CapturedWorkloadsRebuildTheCaseTheyCameFrom) {
  int ops = 0;
  for (const OpDef* def : OpRegistry::global().defs()) {
    if (!def->make_case || !def->workload_from_call) continue;
    ++ops;
    for (size_t i = 0; i < def->test_workloads.size(); ++i) {
      const Json& w = def->test_workloads[i];
      const uint64_t seed = test::seed_for("WorkloadRoundTrip", i);
      const OpCase c = def->make_case(w, seed);
      const Json back = def->workload_from_call(c.args_ptr());
      for (const auto& [key, value] : back.items())
        if (w.contains(key))
          EXPECT_TRUE(same_value(w[key], value))
              << def->name << " " << w.dump() << ": field " << key << " came back as " << value.dump();
      OpCase again;
      ASSERT_NO_THROW(again = def->make_case(back, seed)) << def->name << " " << w.dump() << " -> " << back.dump();
      ASSERT_EQ(again.tensors.size(), c.tensors.size()) << def->name;
      for (size_t t = 0; t < c.tensors.size(); ++t)
        EXPECT_EQ(tensor_summary(again.tensors[t]), tensor_summary(c.tensors[t]))
            << def->name << " " << w.dump() << " -> " << back.dump() << ": tensor " << def->tensor_args[t].name;
    }
  }
  EXPECT_GE(ops, 20) << "the ops a decoder calls can all be captured";
}

}  // namespace
}  // namespace fk
