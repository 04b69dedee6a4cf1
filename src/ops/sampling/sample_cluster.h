// The CUDA sampler's cap on the blocks (a thread-block cluster) that share one row
// (sample.cu): kSampleMaxCluster unless FK_SAMPLE_MAX_CLUSTER asks for 1 (one block per
// row) .. 8. Defined in CPU builds too, where it has no effect, so that tests can set it
// in both.
#pragma once

namespace fk::ops {

inline constexpr int kSampleMaxCluster = 8;  // portable cluster size

int sample_max_cluster();

// For tests, which must run the cluster path whatever the environment says: sets the cap
// (read as the variable is: outside 1..kSampleMaxCluster means kSampleMaxCluster) and returns the previous
// one. Set it between launches.
int set_sample_max_cluster(int n);

}  // namespace fk::ops
