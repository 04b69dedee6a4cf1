// The parsed template: expression and statement trees. One node type each, with a kind
// tag, keeps the parser and the renderer short; fields unused by a kind stay empty.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/template/value.h"

namespace fk::chat::detail {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum Kind {
    Literal,   // value
    Name,      // name
    ListLit,   // args = items
    DictLit,   // args = key0, value0, key1, value1...
    Attr,      // args[0].name
    Item,      // args[0][args[1]]
    Slice,     // args[0][args[1]:args[2]:args[3]] (null = omitted)
    Call,      // args[0](args[1..], kwargs)
    Filter,    // args[0] | name(args[1..], kwargs)
    Test,      // args[0] is [not] name(args[1..])
    Unary,     // name ("not", "-", "+") args[0]
    Binary,    // args[0] name args[1]; name is the operator ("and", "in", "not in", "~"...)
    Cond,      // args[1] if args[0] else args[2] (args[2] may be null)
    Compare,   // args[0] ops[0] args[1] ops[1] args[2]...: Python's chained comparison
  } kind;
  int line = 0, col = 0;
  Value value;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  bool negated = false;
  int depth = 1;                     // height of this subtree (bounded by the parser)
  bool tuple = false;                // ListLit written as (a, b)
  std::vector<std::string> ops;      // Compare: operators between args[i] and args[i+1]
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum Kind {
    Text,      // text
    Output,    // {{ expr }}
    If,        // conds[i] -> bodies[i]; bodies.back() is else when bodies > conds
    For,       // for targets in expr [if cond]: bodies[0], else bodies[1]
    Set,       // set targets = expr; or ns.attr = expr (attr non-empty)
    SetBlock,  // set targets[0] %}bodies[0]{% endset
    Macro,     // macro targets[0](params) bodies[0]
    CallBlock, // call(params) expr %}bodies[0]{% endcall: expr is a Call, given caller=
    FilterBlock,  // filter expr %}bodies[0]{% endfilter: expr is a Filter on a placeholder
    Break,
    Continue,
  } kind;
  int line = 0, col = 0;
  std::string text;
  ExprPtr expr, cond;
  std::vector<ExprPtr> conds;
  std::vector<Body> bodies;
  std::vector<std::string> targets;
  std::string attr;
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro parameters and defaults
};

struct Program {
  std::string name;
  Body body;
};

}  // namespace fk::chat::detail
