// The cap of sample_cluster.h. The variable is read once; tests may replace its value.
#include "ops/sampling/sample_cluster.h"

#include <atomic>
#include <cstdlib>

namespace fk::ops {
namespace {

int valid_cap(int n) { return n >= 1 && n <= kSampleMaxCluster ? n : kSampleMaxCluster; }

std::atomic<int>& cap() {
  static std::atomic<int> c{[] {
    const char* v = std::getenv("FK_SAMPLE_MAX_CLUSTER");
    return valid_cap(v ? std::atoi(v) : kSampleMaxCluster);
  }()};
  return c;
}

}  // namespace

int sample_max_cluster() { return cap().load(std::memory_order_relaxed); }

int set_sample_max_cluster(int n) { return cap().exchange(valid_cap(n), std::memory_order_relaxed); }

}  // namespace fk::ops
