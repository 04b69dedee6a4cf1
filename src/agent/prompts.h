// The conversations each strategy sends: the first request (system + task contract), a
// refinement turn (the previous candidate's feedback), a mutation (a parent's code and its
// feedback) and a crossover (two good candidates, asking to combine their ideas), and the
// trimming that keeps a long refinement within a character budget.
#pragma once
#include <string>
#include <vector>

#include "agent/endpoint_client.h"
#include "fk/tensor_view.h"

namespace fk::agent {

std::string system_prompt(DeviceType backend);
std::vector<ChatMessage> initial_messages(const std::string& contract, DeviceType backend);
// The user turn that follows a candidate in a refinement.
std::string refine_turn(const std::string& step, const std::string& feedback);

struct ParentView {
  std::string step, code, feedback;
};
std::vector<ChatMessage> mutation_messages(const std::string& contract, DeviceType backend, const ParentView& parent);
std::vector<ChatMessage> crossover_messages(const std::string& contract, DeviceType backend, const ParentView& a,
                                            const ParentView& b);

// Keeps the first `head` messages (system + contract) and as many of the latest turns as
// fit in max_chars (at least the last user turn), in whole assistant/user pairs; a note
// says how many turns were left out. max_chars 0: no limit.
std::vector<ChatMessage> trim_history(const std::vector<ChatMessage>& messages, size_t max_chars, size_t head = 2);

}  // namespace fk::agent
