// One attempt of a strategy: a model call, the code extracted from its answer, the
// candidate file, its evaluation, the reward and the feedback the model sees next.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fk::agent {

enum class Outcome {
  evaluated,       // the harness judged the candidate (any verdict)
  no_code,         // the answer held no usable code block
  endpoint_error,  // the model call failed (after its retries)
  not_run,         // a budget was spent before the call
};
std::string outcome_name(Outcome o);

struct Attempt {
  std::string step;                  // "s0", "t3", "g2-1": unique within a task and strategy
  std::string kind;                  // "sample", "refine", "mutation", "crossover"
  std::vector<std::string> parents;  // steps whose code the prompt showed
  Outcome outcome = Outcome::not_run;
  std::string response;              // the model's answer
  std::string finish_reason;
  std::string code;                  // extracted source ("" unless evaluated)
  std::filesystem::path candidate;   // the file written for it
  std::string verdict;               // verdict name when evaluated
  std::string message;               // the verdict's message, the endpoint error, or why no code
  double speedup = 0, sol = 0;
  double reward = 0;                 // 0 unless PASSED, then the speedup
  std::string feedback;              // what the model is told about this attempt
  std::string stop_reason;           // not_run: which budget was spent; endpoint_error: "fatal: ..." if fatal
  bool fatal = false;                // the endpoint refused in a way retrying will not fix (401/403/404)
  int64_t prompt_tokens = 0, completion_tokens = 0;

  bool passed() const { return verdict == "PASSED"; }
  bool has_code() const { return outcome == Outcome::evaluated; }
};

// Orders attempts for selection: reward first, then how close a failing candidate came
// (INCORRECT > RUNTIME_ERROR > TIMEOUT > COMPILE_ERROR > REWARD_HACK > no code), then the
// earlier step. True when a ranks before b.
bool better(const Attempt& a, const Attempt& b);
int verdict_rank(const Attempt& a);

nlohmann::json to_json(const Attempt& a);  // the summary's view: no response/code text

}  // namespace fk::agent
