#include "agent/code_extract.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

namespace fk::agent {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

bool is_code_language(const std::string& info) {
  static const char* kLanguages[] = {"", "cuda", "cu", "cuh", "cpp", "c++", "cxx", "cc", "c", "h", "hpp"};
  // The info string's first word names the language ("cpp title=x.cpp" is cpp).
  const std::string lang = lower(info.substr(0, info.find_first_of(" \t{")));
  return std::any_of(std::begin(kLanguages), std::end(kLanguages), [&](const char* l) { return lang == l; });
}

// Drops <think>...</think> sections (reasoning models' drafts); an unclosed one runs to the end.
std::string without_thinking(const std::string& s) {
  std::string out;
  size_t at = 0;
  while (true) {
    const size_t open = s.find("<think>", at);
    if (open == std::string::npos) break;
    out += s.substr(at, open - at);
    const size_t close = s.find("</think>", open);
    if (close == std::string::npos) return out;
    at = close + 8;
  }
  return out + s.substr(at);
}

struct Block {
  std::string info, code;
  bool complete = false;
};

// A fence is a line of at least three backticks, indented by at most three spaces; a block
// closes with a fence at least as long as its opening one and without an info string.
std::vector<Block> fenced_blocks(const std::string& text) {
  std::vector<Block> out;
  std::istringstream in(text);
  std::string line;
  bool inside = false;
  size_t fence_len = 0;
  Block cur;
  while (std::getline(in, line)) {
    const size_t indent = line.find_first_not_of(' ');
    size_t ticks = 0;
    if (indent != std::string::npos && indent <= 3)
      while (indent + ticks < line.size() && line[indent + ticks] == '`') ++ticks;
    if (!inside) {
      if (ticks >= 3) {
        inside = true;
        fence_len = ticks;
        cur = Block{trim(line.substr(indent + ticks)), "", false};
      }
    } else if (ticks >= fence_len && trim(line.substr(indent + ticks)).empty()) {
      cur.complete = true;
      out.push_back(cur);
      inside = false;
    } else {
      cur.code += line + "\n";
    }
  }
  if (inside) out.push_back(cur);  // cut off
  return out;
}

}  // namespace

ExtractedCode extract_code(const std::string& answer) {
  ExtractedCode r;
  const std::vector<Block> blocks = fenced_blocks(without_thinking(answer));
  const Block* exporting = nullptr;
  const Block* largest = nullptr;
  bool truncated = false, other_languages = false;
  for (const auto& b : blocks) {
    if (!b.complete) {
      truncated = true;
      continue;
    }
    if (!is_code_language(b.info)) {
      other_languages = true;
      continue;
    }
    if (b.code.find_first_not_of(" \t\r\n") == std::string::npos) continue;
    ++r.blocks;
    if (b.code.find("FK_EXPORT_CANDIDATE") != std::string::npos) exporting = &b;
    if (!largest || b.code.size() > largest->code.size()) largest = &b;
  }
  const Block* pick = exporting ? exporting : largest;
  if (pick) {
    r.found = true;
    r.code = pick->code;
    r.language = pick->info.substr(0, pick->info.find_first_of(" \t{"));
    return r;
  }
  if (truncated)
    r.problem = "the answer opens a code block that is never closed (cut off?); no complete code block";
  else if (other_languages)
    r.problem = "the answer has code blocks, but none in CUDA/C++ (```cuda or ```cpp)";
  else if (answer.find_first_not_of(" \t\r\n") == std::string::npos)
    r.problem = "the answer is empty";
  else
    r.problem = "the answer contains no fenced code block (```cuda or ```cpp)";
  return r;
}

}  // namespace fk::agent
