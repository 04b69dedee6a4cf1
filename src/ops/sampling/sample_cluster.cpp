// The cap of sample_cluster.h, from sample's variants.
#include "ops/sampling/sample_cluster.h"

#include <array>

#include "fk/op_registry.h"
#include "fk/status.h"
#include "ops/common/variant_flag.h"

namespace fk::ops {
namespace {

FK_REGISTER_VARIANT("sample", "max_cluster_1", "one block per row, no thread-block cluster");
FK_REGISTER_VARIANT("sample", "max_cluster_2", "clusters of at most 2 blocks per row");
FK_REGISTER_VARIANT("sample", "max_cluster_4", "clusters of at most 4 blocks per row");

struct CapVariant {
  int cap;
  VariantFlag flag;
};
const std::array<CapVariant, 3> caps{{{1, VariantFlag("sample", "max_cluster_1")},
                                      {2, VariantFlag("sample", "max_cluster_2")},
                                      {4, VariantFlag("sample", "max_cluster_4")}}};

}  // namespace

int sample_max_cluster() {
  int cap = 0;
  for (const CapVariant& c : caps) {
    if (!c.flag.on()) continue;
    if (cap != 0)
      FK_FAIL(FK_ERR_INVALID_ARGUMENT, "sample: variants max_cluster_", cap, " and max_cluster_", c.cap,
              " are both selected; select one");
    cap = c.cap;
  }
  return cap != 0 ? cap : kSampleMaxCluster;
}

}  // namespace fk::ops
