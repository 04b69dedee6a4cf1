// case_to_device gives every case its own host-only tensors. A plan writes into them
// (plan_info records the workspace it was made for), so a baseline case and a candidate
// case sharing one ran on each other's plan: the harness's interleaved timing of the paged
// attention tasks failed with "the plan in plan_info was made for int_workspace address ...".
#include <gtest/gtest.h>

#include "harness/check/op_check.h"
#include "fk/op_registry.h"
#include "support/test_seed.h"

namespace fk::bench {
namespace {

TEST(CaseToDevice, HostOnlyTensorsAreCopiedNotShared) {
  for (const char* op : {"batch_decode_paged_attention", "batch_prefill_paged_attention"}) {
    const OpDef& def = OpRegistry::global().def(op);
    ASSERT_FALSE(def.test_workloads.empty()) << op;
    const OpCase host = def.make_case(def.test_workloads.front(), test::seed_for(op));
    const OpCase a = case_to_device(def, host, Device::cpu());
    const OpCase b = case_to_device(def, host, Device::cpu());
    int host_only = 0;
    for (size_t i = 0; i < def.tensor_args.size(); ++i) {
      if (!host.tensors[i].defined()) continue;
      EXPECT_NE(a.tensors[i].data(), b.tensors[i].data()) << op << ": " << def.tensor_args[i].name << " is shared";
      EXPECT_NE(a.tensors[i].data(), host.tensors[i].data()) << op << ": " << def.tensor_args[i].name;
      host_only += def.tensor_args[i].host_only;
    }
    EXPECT_GT(host_only, 0) << op << " declares no host-only argument; the test checks nothing";
  }
}

}  // namespace
}  // namespace fk::bench
