#include "harness/judge/case_staging.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "harness/judge/plan_guard.h"

namespace fk::bench {
namespace {

constexpr size_t kAlign = 256;

size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

}  // namespace

CaseStaging::~CaseStaging() {
  if (arena_ != nullptr) munmap(arena_, arena_bytes_);
}

void CaseStaging::reserve(size_t bytes) {
  if (bytes <= arena_bytes_ && arena_ != nullptr) return;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // Grown geometrically: the runner maps the arena anew each time it grows.
  const size_t want = round_up(std::max({bytes, 2 * arena_bytes_, size_t{1} << 20}), page);
  FK_CHECK(ftruncate(runner_.arena_fd(), static_cast<off_t>(want)) == 0, "cannot size the runner's arena to ", want,
           " bytes: ", std::strerror(errno));
  if (arena_ != nullptr) munmap(arena_, arena_bytes_);
  void* p = mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_SHARED, runner_.arena_fd(), 0);
  FK_CHECK(p != MAP_FAILED, "cannot map the runner's arena (", want, " bytes): ", std::strerror(errno));
  arena_ = static_cast<std::byte*>(p);
  arena_bytes_ = want;
  runner_arena_ = runner_.map_arena(want);
}

std::vector<std::byte> CaseStaging::stage(const OpDef& def, const OpCase& c, bool plan_only) {
  std::vector<std::byte> args = plan_only ? plan_only_args(def, c, runner_.guard()) : c.args;
  // The byte ranges of the tensors to copy, merged where they overlap.
  struct Range {
    std::byte* lo;
    std::byte* hi;
  };
  std::vector<Range> ranges;
  for (const TensorArg& a : def.tensor_args) {
    if (plan_only && !is_plan_input(a)) continue;
    const auto& v = *reinterpret_cast<const TensorView*>(c.args.data() + a.offset);
    if (v.data == nullptr) continue;
    auto* lo = static_cast<std::byte*>(v.data);
    ranges.push_back({lo, lo + v.span_bytes()});
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& x, const Range& y) { return x.lo < y.lo; });
  std::vector<Range> merged;
  for (const Range& r : ranges)
    if (!merged.empty() && r.lo < merged.back().hi) merged.back().hi = std::max(merged.back().hi, r.hi);
    else merged.push_back(r);
  stretches_.clear();
  size_t end = 0;
  for (const Range& r : merged) {
    const size_t misalign = reinterpret_cast<uintptr_t>(r.lo) % kAlign;
    const size_t offset = round_up(end, kAlign) + misalign;
    stretches_.push_back({r.lo, static_cast<size_t>(r.hi - r.lo), offset});
    end = offset + static_cast<size_t>(r.hi - r.lo);
  }
  reserve(end);
  for (const Stretch& s : stretches_)
    if (s.bytes > 0) std::memcpy(arena_ + s.offset, s.host, s.bytes);
  // Each staged pointer moves with its stretch, into the runner's mapping.
  for (const TensorArg& a : def.tensor_args) {
    if (plan_only && !is_plan_input(a)) continue;
    auto& v = *reinterpret_cast<TensorView*>(args.data() + a.offset);
    if (v.data == nullptr) continue;
    auto* p = static_cast<std::byte*>(v.data);
    const auto it = std::find_if(stretches_.begin(), stretches_.end(),
                                 [&](const Stretch& s) { return p >= s.host && p <= s.host + s.bytes; });
    FK_CHECK(it != stretches_.end(), "case staging: argument '", a.name, "' lies in no staged stretch");
    v.data = reinterpret_cast<void*>(runner_arena_ + it->offset + static_cast<size_t>(p - it->host));
  }
  return args;
}

void CaseStaging::unstage() const {
  for (const Stretch& s : stretches_)
    if (s.bytes > 0) std::memcpy(s.host, arena_ + s.offset, s.bytes);
}

}  // namespace fk::bench
