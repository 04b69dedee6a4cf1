// Recursive-descent parser from lexer tokens to the AST, with Jinja2's operator
// precedence. Errors name "<template>:<line>:<col>".
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "text/template/ast.h"
#include "text/template/lexer.h"

namespace fk::chat::detail {

// The filters and tests the renderer implements (filters.cpp); others are syntax errors.
bool is_known_filter(const std::string& name);
bool is_known_test(const std::string& name);

Body parse_tokens(const std::vector<Token>& tokens, std::string_view name);

}  // namespace fk::chat::detail
