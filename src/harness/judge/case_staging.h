// A call's tensors in a runner's arena (runner_process.h): the judge's case stays in the
// judge's memory, and for each call of a runner its tensors are copied into shared memory
// that both processes map, the argument struct rewritten to point there in the runner's
// mapping, and after the reply everything is copied back (outputs, and inputs a candidate
// may have altered, which the judge's fingerprints then see). Views that overlap (an
// inout tensor and a view of it, a strided view of a larger buffer) are laid out as one
// stretch, so they overlap in the arena as they did in the case; each stretch keeps its
// address modulo 256, so alignment (and misalignment) is what the case had.
//
// A case staged the same way twice lands at the same addresses: a runner keying a cache
// on pointers sees the reused buffers the judge's checks give it (and different cases
// share addresses, which a pointer cache cannot tell apart either).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "fk/op_registry.h"
#include "harness/judge/runner_process.h"

namespace fk::bench {

class CaseStaging {
 public:
  explicit CaseStaging(RunnerProcess& runner) : runner_(runner) {}
  ~CaseStaging();
  CaseStaging(const CaseStaging&) = delete;
  CaseStaging& operator=(const CaseStaging&) = delete;

  // Copies c's tensors into the arena and returns the argument struct for the runner. For
  // a plan that may not see data (plan_guard.h) only its plan inputs are copied; the other
  // tensors point into the runner's guard region.
  std::vector<std::byte> stage(const OpDef& def, const OpCase& c, bool plan_only);
  // Copies what the last stage() copied in back out of the arena, into the same case.
  void unstage() const;

 private:
  struct Stretch {
    std::byte* host = nullptr;  // the judge's bytes
    size_t bytes = 0;
    size_t offset = 0;          // in the arena
  };
  void reserve(size_t bytes);

  RunnerProcess& runner_;
  std::vector<Stretch> stretches_;
  std::byte* arena_ = nullptr;  // the judge's mapping
  size_t arena_bytes_ = 0;
  uint64_t runner_arena_ = 0;   // the runner's mapping
};

}  // namespace fk::bench

namespace fk::bench {

// An implementation that runs in a runner process: the runner and its arena.
struct RemoteImplementation {
  std::unique_ptr<RunnerProcess> runner;
  std::unique_ptr<CaseStaging> staging;
  explicit RemoteImplementation(RunnerSpec spec)
      : runner(std::make_unique<RunnerProcess>(std::move(spec))), staging(std::make_unique<CaseStaging>(*runner)) {}
};

}  // namespace fk::bench
