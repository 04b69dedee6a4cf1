#include "harness/time/kernel_profile.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>

namespace fk::bench {

std::string demangle(const std::string& name) {
  // Only an Itanium-mangled name is demangled: the demangler would read "a" as a type.
  if (name.rfind("_Z", 0) != 0) return name;
  int status = -1;
  std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status),
                                                &std::free);
  return status == 0 && d ? std::string(d.get()) : name;
}

std::string short_kernel_name(const std::string& mangled) {
  std::string name = demangle(mangled);
  if (name.rfind("void ", 0) == 0) name.erase(0, 5);  // a kernel's return type says nothing
  // Drop the parameter list: the '(' that opens at template depth 0, searched from the end
  // so that a '(' inside a template argument (a function type, a cast) is kept.
  int depth = 0;
  for (size_t i = name.size(); i-- > 0;) {
    const char c = name[i];
    if (c == ')' || c == '>') ++depth;
    else if (c == '<') --depth;
    else if (c == '(' && --depth == 0) {
      if (i > 0) name.resize(i);
      break;
    }
  }
  return name;
}

KernelProfile profile_kernels(const std::vector<KernelRecord>& records, uint64_t from_ns, uint64_t to_ns) {
  std::vector<const KernelRecord*> in;
  for (const KernelRecord& r : records)
    if (r.kind == TraceKind::kernel && r.start_ns >= from_ns && r.start_ns < to_ns && r.end_ns >= r.start_ns)
      in.push_back(&r);
  std::stable_sort(in.begin(), in.end(), [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
  KernelProfile p;
  std::map<std::string, KernelProfileRow> by_name;
  uint64_t covered_to = 0;  // the latest end of the kernels that started so far
  for (const KernelRecord* r : in) {
    KernelProfileRow& row = by_name[r->name];
    ++row.launches;
    row.total_ns += r->end_ns - r->start_ns;
    const uint64_t from = std::max(r->start_ns, covered_to);
    if (r->end_ns > from) row.exclusive_ns += r->end_ns - from;
    covered_to = std::max(covered_to, r->end_ns);
  }
  for (auto& [mangled, row] : by_name) {
    row.name = short_kernel_name(mangled);
    p.kernel_ns += row.total_ns;
    p.busy_ns += row.exclusive_ns;
    p.launches += row.launches;
    p.rows.push_back(std::move(row));
  }
  std::sort(p.rows.begin(), p.rows.end(),
            [](const auto& a, const auto& b) { return a.exclusive_ns > b.exclusive_ns; });
  if (!in.empty()) p.span_ns = covered_to - in.front()->start_ns;
  return p;
}

nlohmann::json kernel_profile_json(const KernelProfile& p, double units, size_t top) {
  const double per = units > 0 ? 1.0 / units : 1.0;
  const auto us = [&](uint64_t ns) { return 1e-3 * static_cast<double>(ns) * per; };
  // A row's share of the busy time.
  const auto share = [&](uint64_t ns) {
    return p.busy_ns ? static_cast<double>(ns) / static_cast<double>(p.busy_ns) : 0.0;
  };
  const auto row_json = [&](const KernelProfileRow& r) -> nlohmann::json {
    return {{"kernel", r.name},
            {"launches", static_cast<double>(r.launches) * per},
            {"exclusive_us", us(r.exclusive_ns)},
            {"us", us(r.total_ns)},
            {"share", share(r.exclusive_ns)}};
  };
  nlohmann::json rows = nlohmann::json::array();
  KernelProfileRow rest;  // the rows past `top`, summed
  for (size_t i = 0; i < p.rows.size(); ++i) {
    const KernelProfileRow& r = p.rows[i];
    if (i < top) {
      rows.push_back(row_json(r));
      continue;
    }
    rest.total_ns += r.total_ns;
    rest.exclusive_ns += r.exclusive_ns;
    rest.launches += r.launches;
  }
  if (rest.launches > 0) {
    rest.name = "(" + std::to_string(p.rows.size() - top) + " other kernels)";
    rows.push_back(row_json(rest));
  }
  return {{"kernels", rows},
          {"launches", static_cast<double>(p.launches) * per},
          {"kernel_us", us(p.kernel_ns)},
          {"busy_us", us(p.busy_ns)},
          {"span_us", us(p.span_ns)},
          {"idle_us", us(p.span_ns - std::min(p.span_ns, p.busy_ns))}};
}

}  // namespace fk::bench
