// Splits template source into text and the tokens inside {{ }} and {% %}, applying
// Jinja2's whitespace control on the way ({%- -%}, trim_blocks, lstrip_blocks), dropping
// comments and turning {% raw %} blocks into text. The parser never sees whitespace rules.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace fk::chat::detail {

enum class Tok { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };

struct Token {
  Tok kind;
  std::string text;  // text data, name, operator, unescaped string or number spelling
  int line = 1, col = 1;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Throws fk::Error "<name>:<line>:<col>: <what>" on malformed input.
std::vector<Token> lex(std::string_view src, std::string_view name, const LexOptions& opt);

}  // namespace fk::chat::detail
