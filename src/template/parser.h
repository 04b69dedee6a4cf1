// Recursive-descent parser from lexer tokens to the AST, with Jinja2's operator
// precedence. Errors name "<template>:<line>:<col>".
#pragma once
#include <string_view>
#include <vector>

#include "template/ast.h"
#include "template/lexer.h"

namespace fk::chat::detail {

Body parse_tokens(const std::vector<Token>& tokens, std::string_view name);

}  // namespace fk::chat::detail
