// The candidate source in a model's answer: fenced ```cuda / ```cpp / ```c++ (or untagged)
// blocks. Of the complete blocks, the last one that exports the op (FK_EXPORT_CANDIDATE)
// wins, else the largest; <think>...</think> sections are ignored. An answer without such
// a block is a "no code" outcome whose reason is fed back to the model.
#pragma once
#include <string>

namespace fk::agent {

struct ExtractedCode {
  bool found = false;
  std::string code;      // without the fences, ending in a newline
  std::string language;  // the fence's info string ("cuda", "cpp", "" for untagged)
  int blocks = 0;        // complete code blocks seen
  std::string problem;   // why nothing was found (when !found)
};

ExtractedCode extract_code(const std::string& answer);

}  // namespace fk::agent
