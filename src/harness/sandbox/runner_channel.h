// The messages between the judge and a runner process (runner_process.h, runner_loop.h):
// one request, one reply, over a SOCK_SEQPACKET socket pair. A runner serves one op
// implementation, a candidate's or the baseline's; the tensors of each call lie in an
// arena of shared memory both map (case_staging.h), and a request carries only the call's
// argument struct, its pointers already into the runner's mapping.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fk::bench {

enum class RunnerMessage : uint32_t {
  // runner -> judge, before any candidate code is loaded: `value` is the runner's plan
  // guard (plan_guard.h), where the pointers of tensors a plan may not read go.
  hello = 1,
  // runner -> judge, once the implementation is loaded: `status` 0 and `value` 1 when it
  // has a plan entry point; or `status` non-zero with the reason in the text (no loading).
  loaded = 2,
  // judge -> runner: map the arena anew at `value` bytes; the reply's `value` is where.
  map_arena = 3,
  // judge -> runner: call the op (run) or its plan with the argument struct in the
  // payload; the reply's `status` is the fk_status, its text the error message.
  run = 4,
  plan = 5,
  reply = 6,
  // judge -> runner, before a timed call's tensors are staged: the runner replies, then
  // polls for the request without sleeping for a while (kWakeSpinSeconds), so the timed
  // request finds it awake: its wake-up is not timed as the call's. The tensors are staged
  // after the reply, so nothing of the call's inputs is in reach any earlier than before.
  wake = 7,
};

inline constexpr double kWakeSpinSeconds = 0.001;

struct RunnerHeader {
  RunnerMessage kind = RunnerMessage::reply;
  int32_t status = 0;
  uint64_t value = 0;
};

// Largest message: an op's argument struct, or an error message, is far below it.
inline constexpr size_t kMaxRunnerMessage = 64 * 1024;

// Sends one message; false when the other side is gone.
bool send_runner_message(int fd, const RunnerHeader& h, const void* payload = nullptr, size_t bytes = 0);
// Receives one message: polls without sleeping (yielding the processor at each turn) for up
// to `poll_seconds`, then waits. With `sent_ns`, on a socket with SO_TIMESTAMPNS set: the
// time (CLOCK_REALTIME, ns) the kernel stamped the message with as it was sent, or 0 where
// none came; a reply's stamp ends a timed call, so the judge's own wake-up is not the
// call's. False at end of stream (the other side closed or died) or for a message too
// short to hold a header.
inline constexpr double kPollForever = 1e300;
bool receive_runner_message(int fd, RunnerHeader& h, std::vector<std::byte>& payload, int64_t* sent_ns = nullptr,
                            double poll_seconds = 0);
// Stamps every message this end receives with its send time (receive_runner_message).
bool stamp_received_messages(int fd);
int64_t realtime_ns();

std::string payload_text(const std::vector<std::byte>& payload);

}  // namespace fk::bench
