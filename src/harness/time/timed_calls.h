// Wall-clock times of a piece of work called repeatedly: how the e2e runs of the models with
// their own runners (e2e_classify_run.h and its siblings) and the commands that run them
// (fk classify, detect, recommend, fold) time a forward pass. A model's first calls pay for
// lazy set-up (algorithm choice, workspaces, the allocator's first blocks) that is not the
// model's time: untimed warm-up calls leave it out.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace fk::bench {

// Calls `call` `warmups` times untimed, then `iters` (at least 1) times timed; the timed
// calls' seconds, in call order. `call` must finish its device work before it returns (by
// copying its results to the host, or synchronising), or a time is only its launches'.
std::vector<double> time_calls(int64_t warmups, int64_t iters, const std::function<void()>& call);

}  // namespace fk::bench
