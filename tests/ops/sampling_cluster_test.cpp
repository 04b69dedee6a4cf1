// The sampler's cluster cap (ops/sampling/sample_cluster.h) follows sample's variants,
// selected in-process.
#include <gtest/gtest.h>

#include <string>

#include "fk/op_registry.h"
#include "fk/status.h"
#include "ops/sampling/sample_cluster.h"

namespace fk::ops {
namespace {

TEST(SampleCluster, CapFollowsTheSelectedVariant) {
  OpRegistry& r = OpRegistry::global();
  r.select_variants("sample", {});
  EXPECT_EQ(sample_max_cluster(), kSampleMaxCluster);
  for (int cap : {1, 2, 4}) {
    r.select_variants("sample", {"max_cluster_" + std::to_string(cap)});
    EXPECT_EQ(sample_max_cluster(), cap);
  }
  r.select_variants("sample", {"max_cluster_1", "max_cluster_4"});
  EXPECT_THROW(sample_max_cluster(), Error);
  r.select_variants("sample", {});
  EXPECT_EQ(sample_max_cluster(), kSampleMaxCluster);
}

TEST(SampleCluster, OnlyCapsThatChangeThePathAreVariants) {
  // The cluster doubles from one block: 3 would act as 4, 8 is the default.
  EXPECT_THROW(OpRegistry::global().select_variants("sample", {"max_cluster_3"}), Error);
  EXPECT_THROW(OpRegistry::global().select_variants("sample", {"max_cluster_8"}), Error);
}

}  // namespace
}  // namespace fk::ops
