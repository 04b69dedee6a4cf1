#include "harness/sandbox/runner_loop.h"

#include <sys/mman.h>

#include <cstring>
#include <exception>
#include <memory>
#include <vector>

#include "fk/status.h"
#include "harness/judge/plan_guard.h"
#include "harness/sandbox/runner_channel.h"

namespace fk::bench {
namespace {

bool reply(int channel, int32_t status, uint64_t value, const std::string& text = "") {
  return send_runner_message(channel, {RunnerMessage::reply, status, value}, text.data(), text.size());
}

}  // namespace

int serve_runner(int channel, int arena_fd, const std::function<RunnerEntryPoints()>& load) {
  const uint64_t guard = reinterpret_cast<uint64_t>(plan_guard());
  if (!send_runner_message(channel, {RunnerMessage::hello, 0, guard})) return 2;
  RunnerEntryPoints entry;
  try {
    entry = load();
  } catch (const std::exception& e) {
    const std::string why = e.what();
    send_runner_message(channel, {RunnerMessage::loaded, 1, 0}, why.data(), why.size());
    return 0;
  }
  if (!send_runner_message(channel, {RunnerMessage::loaded, 0, entry.plan != nullptr ? 1u : 0u})) return 2;
  void* arena = nullptr;
  size_t arena_bytes = 0;
  RunnerHeader h;
  std::vector<std::byte> payload;
  // The argument struct, aligned for any of its members.
  auto args = std::make_unique<std::max_align_t[]>(kMaxRunnerMessage / sizeof(std::max_align_t));
  bool awake = false;  // a wake request came: the next one is polled for
  while (receive_runner_message(channel, h, payload, nullptr, awake ? kWakeSpinSeconds : 0)) {
    awake = false;
    if (h.kind == RunnerMessage::wake) {
      if (!reply(channel, 0, 0)) break;
      awake = true;
    } else if (h.kind == RunnerMessage::map_arena) {
      if (arena != nullptr) munmap(arena, arena_bytes);
      arena = mmap(nullptr, h.value, PROT_READ | PROT_WRITE, MAP_SHARED, arena_fd, 0);
      if (arena == MAP_FAILED) {
        arena = nullptr;
        arena_bytes = 0;
        if (!reply(channel, -1, 0, concat("the runner cannot map ", h.value, " bytes: ", std::strerror(errno)))) break;
        continue;
      }
      arena_bytes = h.value;
      if (!reply(channel, 0, reinterpret_cast<uint64_t>(arena))) break;
    } else if (h.kind == RunnerMessage::run || h.kind == RunnerMessage::plan) {
      const fk_op_fn fn = h.kind == RunnerMessage::run ? entry.run : entry.plan;
      if (fn == nullptr) {
        if (!reply(channel, FK_ERR_INVALID_ARGUMENT, 0, "no such entry point")) break;
        continue;
      }
      std::memcpy(args.get(), payload.data(), payload.size());
      set_last_error_message("");
      const fk_status s = fn(args.get(), nullptr);
      if (!reply(channel, s, 0, s == FK_OK ? "" : last_error_message())) break;
    } else if (!reply(channel, FK_ERR_INVALID_ARGUMENT, 0, "unknown request")) {
      break;
    }
  }
  return 0;
}

}  // namespace fk::bench
