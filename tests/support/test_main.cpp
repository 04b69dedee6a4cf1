// main() of every test executable, and of the runner processes a test starts. Prints the seed base so that a failure with fresh
// random inputs can be reproduced (FK_TEST_SEED=<seed>).
#include <gtest/gtest.h>

#include <cstdio>

#include "harness/sandbox/runner_args.h"
#include "support/test_seed.h"

int main(int argc, char** argv) {
  // A test that judges starts runner processes from its own executable (runner_process.h).
  fk::bench::serve_as_runner_if_asked(argc, argv);
  testing::InitGoogleTest(&argc, argv);
  std::printf("[ fk      ] test seed base %llu (set FK_TEST_SEED to reproduce)\n",
              static_cast<unsigned long long>(fk::test::seed_base()));
  return RUN_ALL_TESTS();
}
