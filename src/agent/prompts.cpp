#include "agent/prompts.h"

#include "fk/status.h"

namespace fk::agent {

namespace {

std::string fence(DeviceType backend) { return backend == DeviceType::cuda ? "cuda" : "cpp"; }

std::string answer_format(DeviceType backend) {
  return concat("Answer with one complete, self-contained source file in a single fenced ```", fence(backend),
                " code block (it must export the op with FK_EXPORT_CANDIDATE). Keep explanations short.");
}

}  // namespace

std::string system_prompt(DeviceType backend) {
  const std::string target = backend == DeviceType::cuda
                                 ? "CUDA kernels for NVIDIA Hopper GPUs (sm_90a)"
                                 : "C++ kernels for the CPU backend";
  return concat("You are an expert performance engineer writing ", target,
                " for an inference engine. A benchmark harness compiles your source with the engine's exact "
                "toolchain, checks it against a double-precision oracle with fresh random inputs, and times it "
                "against the engine's own baseline. Your goal: a correct implementation that is as fast as possible. ",
                answer_format(backend));
}

std::vector<ChatMessage> initial_messages(const std::string& contract, DeviceType backend) {
  return {{"system", system_prompt(backend)},
          {"user", concat(contract, "\nWrite the candidate. ", answer_format(backend))}};
}

std::string refine_turn(const std::string& step, const std::string& feedback) {
  return concat("The harness evaluated your candidate (", step, "):\n\n", feedback,
                "\nFix what failed, or if it passed, make it faster. Reply with the complete new source file.");
}

std::vector<ChatMessage> mutation_messages(const std::string& contract, DeviceType backend, const ParentView& parent) {
  return {{"system", system_prompt(backend)},
          {"user", concat(contract, "\n# A previous candidate (", parent.step, ")\n```", fence(backend), "\n",
                          parent.code, "```\n\n## Its evaluation\n", parent.feedback,
                          "\nImprove this candidate: fix what failed, or if it passed, make it faster (try a different "
                          "optimisation than before). ",
                          answer_format(backend))}};
}

std::vector<ChatMessage> crossover_messages(const std::string& contract, DeviceType backend, const ParentView& a,
                                            const ParentView& b) {
  return {{"system", system_prompt(backend)},
          {"user", concat(contract, "\n# Two of the best candidates so far\n## Candidate A (", a.step, ")\n```",
                          fence(backend), "\n", a.code, "```\nIts evaluation:\n", a.feedback, "\n## Candidate B (",
                          b.step, ")\n```", fence(backend), "\n", b.code, "```\nIts evaluation:\n", b.feedback,
                          "\nCombine the best ideas of A and B into one candidate that is correct and faster than "
                          "both. ",
                          answer_format(backend))}};
}

std::vector<ChatMessage> trim_history(const std::vector<ChatMessage>& messages, size_t max_chars, size_t head) {
  if (max_chars == 0 || total_chars(messages) <= max_chars || messages.size() <= head + 1) return messages;
  size_t used = 0;
  for (size_t i = 0; i < head; ++i) used += messages[i].content.size();
  // Walk back from the end in whole (assistant, user) pairs; the final user turn always stays.
  size_t first = messages.size() - 1;
  used += messages[first].content.size();
  while (first >= head + 2) {
    const size_t pair = messages[first - 1].content.size() + messages[first - 2].content.size();
    if (used + pair > max_chars) break;
    used += pair;
    first -= 2;
  }
  // The kept tail must start with an assistant turn after the contract (user): keep the
  // assistant answer that the final user turn responds to even when over budget.
  if (first > head && messages[first].role == "user" && messages[first - 1].role == "assistant") --first;
  std::vector<ChatMessage> out(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(head));
  const size_t dropped = (first - head) / 2;
  if (dropped > 0)
    out.back().content += concat("\n\n(", dropped, " earlier turn", dropped == 1 ? " was" : "s were",
                                 " left out to fit the context; the latest follow.)");
  out.insert(out.end(), messages.begin() + static_cast<std::ptrdiff_t>(first), messages.end());
  return out;
}

}  // namespace fk::agent
