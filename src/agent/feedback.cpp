#include "agent/feedback.h"

#include <cstdio>
#include <sstream>

namespace fk::agent {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

std::string clip(const std::string& s, size_t n) {
  return s.size() > n ? s.substr(0, n) + concat("\n... (", s.size() - n, " more characters cut)") : s;
}

}  // namespace

std::string evaluation_feedback(const bench::CandidateRun& run, const std::string& profile, size_t max_chars) {
  const bench::EvalResult& r = run.result;
  std::ostringstream os;
  os << "Verdict: " << bench::verdict_name(r.verdict) << "\n";
  if (r.verdict == bench::Verdict::COMPILE_ERROR || (r.verdict == bench::Verdict::TIMEOUT && !run.compile.ok)) {
    os << "Compiler output (verbatim):\n```\n" << clip(r.message, max_chars) << "\n```\n";
    return os.str();
  }
  if (!r.message.empty()) os << clip(r.message, max_chars) << "\n";
  bool header = false;
  for (const auto& w : r.workloads) {
    if (!header) {
      os << "Per workload:\n";
      header = true;
    }
    os << "- " << w.shape.dump();
    if (w.timed) os << " x" << w.calls;
    else os << " (check only)";
    os << (w.correct ? " ok" : " FAIL");
    if (w.correct && w.candidate_rel_l2 > 0)
      os << ", rel L2 error " << fmt("%.3g", w.candidate_rel_l2) << " (baseline " << fmt("%.3g", w.baseline_rel_l2)
         << ")";
    if (w.timed && w.candidate.samples > 0) {
      os << ", baseline " << fmt("%.2f", w.baseline.median_us) << " us, yours " << fmt("%.2f", w.candidate.median_us)
         << " us (p10 " << fmt("%.2f", w.candidate.p10_us) << ", p90 " << fmt("%.2f", w.candidate.p90_us)
         << "), speedup " << fmt("%.3f", w.speedup) << "x";
      if (w.sol_candidate > 0)
        os << ", " << fmt("%.1f", 100 * w.sol_candidate) << "% of speed of light (baseline "
           << fmt("%.1f", 100 * w.sol_baseline) << "%)";
    }
    if (!w.correct && !w.message.empty()) os << "\n  " << clip(w.message, 2000);
    os << "\n";
  }
  if (r.verdict == bench::Verdict::PASSED) {
    os << "Task speedup (call-weighted geometric mean): " << fmt("%.3f", r.speedup) << "x";
    if (r.sol_candidate > 0) os << "; fraction of speed of light " << fmt("%.3f", r.sol_candidate);
    os << "\n";
  }
  if (!profile.empty()) os << "Profiler: " << profile << (profile.back() == '\n' ? "" : "\n");
  return os.str();
}

std::string no_code_feedback(const ExtractedCode& x, const std::string& finish_reason) {
  std::string s = "No candidate: " + x.problem + ".";
  if (finish_reason == "length") s += " The answer hit the completion token limit; answer more briefly.";
  return s + " Answer with one complete source file in a single fenced code block.\n";
}

}  // namespace fk::agent
