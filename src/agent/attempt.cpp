#include "agent/attempt.h"

namespace fk::agent {

std::string outcome_name(Outcome o) {
  switch (o) {
    case Outcome::evaluated: return "evaluated";
    case Outcome::no_code: return "no_code";
    case Outcome::endpoint_error: return "endpoint_error";
    case Outcome::not_run: return "not_run";
  }
  return "?";
}

int verdict_rank(const Attempt& a) {
  if (a.outcome != Outcome::evaluated) return 0;
  if (a.verdict == "PASSED") return 6;
  if (a.verdict == "INCORRECT") return 5;
  if (a.verdict == "RUNTIME_ERROR") return 4;
  if (a.verdict == "TIMEOUT") return 3;
  if (a.verdict == "COMPILE_ERROR") return 2;
  return 1;  // REWARD_HACK: never a parent worth keeping over an honest failure
}

bool better(const Attempt& a, const Attempt& b) {
  if (a.reward != b.reward) return a.reward > b.reward;
  const int ra = verdict_rank(a), rb = verdict_rank(b);
  if (ra != rb) return ra > rb;
  return false;  // stable sorts keep the earlier step first
}

nlohmann::json to_json(const Attempt& a) {
  nlohmann::json j = {{"step", a.step}, {"kind", a.kind}, {"outcome", outcome_name(a.outcome)}};
  if (!a.parents.empty()) j["parents"] = a.parents;
  if (a.outcome == Outcome::evaluated) {
    j["verdict"] = a.verdict;
    j["speedup"] = a.speedup;
    j["sol"] = a.sol;
    j["reward"] = a.reward;
    j["candidate"] = a.candidate.string();
  }
  if (a.outcome == Outcome::no_code || a.outcome == Outcome::endpoint_error) j["message"] = a.message;
  if (a.outcome != Outcome::not_run) j["tokens"] = {{"prompt", a.prompt_tokens}, {"completion", a.completion_tokens}};
  if (!a.stop_reason.empty()) j["stop_reason"] = a.stop_reason;
  return j;
}

}  // namespace fk::agent
