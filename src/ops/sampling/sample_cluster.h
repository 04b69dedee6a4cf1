// The CUDA sampler's cap on the blocks (a thread-block cluster) that share one row
// (sample.cu): kSampleMaxCluster unless one of sample's variants max_cluster_<n> is
// selected (n = 1: one block per row; 2, 4). The cluster size doubles from 1, so only
// powers of two below the default change the path. Host logic, compiled in CPU builds too
// (where it has no effect), so that tests can check the selection in both.
#pragma once

namespace fk::ops {

inline constexpr int kSampleMaxCluster = 8;  // portable cluster size

// The cap the current variant selection asks for; two max_cluster_<n> variants selected
// at once are an fk::Error.
int sample_max_cluster();

}  // namespace fk::ops
