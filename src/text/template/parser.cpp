#include "text/template/parser.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <utility>

#include "fk/status.h"

namespace fk::chat::detail {
namespace {

// Deeper nesting than this is a syntax error rather than a stack overflow.
constexpr int kMaxNesting = 256;
constexpr int kMaxExprDepth = 512;

class Parser {
 public:
  Parser(const std::vector<Token>& t, std::string_view name) : t_(t), name_(name) {}

  Body parse_template() {
    Body body = parse_body({});
    return body;
  }

 private:
  // ---- token helpers -------------------------------------------------------------------
  const Token& peek(size_t k = 0) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  const Token& next() { return t_[std::min(i_++, t_.size() - 1)]; }
  bool is_op(const char* op, size_t k = 0) const { return peek(k).kind == Tok::Op && peek(k).text == op; }
  bool is_name(const char* n, size_t k = 0) const { return peek(k).kind == Tok::Name && peek(k).text == n; }
  [[noreturn]] void fail(const Token& at, const std::string& what) const {
    throw Error(concat(name_, ":", at.line, ":", at.col, ": ", what), FK_ERR_INVALID_ARGUMENT);
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::Eof: return "end of template";
      case Tok::BlockEnd: return "'%}'";
      case Tok::VarEnd: return "'}}'";
      case Tok::Text: return "template text";
      default: return "'" + t.text + "'";
    }
  }
  void expect_op(const char* op) {
    if (!is_op(op)) fail(peek(), concat("expected '", op, "', got ", describe(peek())));
    ++i_;
  }
  std::string expect_name() {
    if (peek().kind != Tok::Name) fail(peek(), concat("expected a name, got ", describe(peek())));
    return next().text;
  }
  void expect_block_end() {
    if (peek().kind != Tok::BlockEnd) fail(peek(), concat("expected '%}', got ", describe(peek())));
    ++i_;
  }
  struct DepthGuard {
    Parser* p;
    DepthGuard(Parser* p_, const Token& at) : p(p_) {
      if (++p->depth_ > kMaxNesting) p->fail(at, "template nested too deeply");
    }
    ~DepthGuard() { --p->depth_; }
  };

  ExprPtr make(Expr::Kind k, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = at.line;
    e->col = at.col;
    return e;
  }

  // ---- statements ----------------------------------------------------------------------
  // Parses until a block whose keyword is in `stops` (left unconsumed after BlockBegin).
  Body parse_body(std::initializer_list<const char*> stops) {
    Body body;
    while (true) {
      const Token& tok = peek();
      if (tok.kind == Tok::Eof) {
        if (stops.size() != 0) {
          std::string expected;
          for (const char* s : stops) expected += (expected.empty() ? "'" : " or '") + std::string(s) + "'";
          fail(tok, concat("unexpected end of template, expected ", expected,
                           open_.empty() ? std::string() : concat(" (the '", open_.back().text, "' block opened at ",
                                                                   open_.back().line, ":", open_.back().col, ")")));
        }
        return body;
      }
      if (tok.kind == Tok::Text) {
        auto n = std::make_unique<Node>();
        n->kind = Node::Text;
        n->text = next().text;
        body.push_back(std::move(n));
      } else if (tok.kind == Tok::VarBegin) {
        next();
        auto n = std::make_unique<Node>();
        n->kind = Node::Output;
        n->line = tok.line;
        n->col = tok.col;
        n->expr = parse_expr();
        if (peek().kind != Tok::VarEnd) fail(peek(), concat("expected '}}', got ", describe(peek())));
        next();
        body.push_back(std::move(n));
      } else if (tok.kind == Tok::BlockBegin) {
        const Token& kw = peek(1);
        if (kw.kind != Tok::Name) fail(kw, "expected a statement keyword");
        for (const char* s : stops)
          if (kw.text == s) {
            next();  // BlockBegin; the caller consumes the keyword
            return body;
          }
        next();
        parse_statement(body);
      } else {
        fail(tok, concat("unexpected ", describe(tok)));
      }
    }
  }

  void parse_statement(Body& body) {
    const Token& kw = next();
    DepthGuard guard(this, kw);
    open_.push_back(kw);
    struct PopOpen {
      std::vector<Token>& v;
      ~PopOpen() { v.pop_back(); }
    } pop_open{open_};
    auto n = std::make_unique<Node>();
    n->line = kw.line;
    n->col = kw.col;
    const std::string& k = kw.text;
    if (k == "if") {
      n->kind = Node::If;
      n->conds.push_back(parse_expr());
      expect_block_end();
      while (true) {
        n->bodies.push_back(parse_body({"elif", "else", "endif"}));
        std::string which = next().text;
        if (which == "elif") {
          n->conds.push_back(parse_expr());
          expect_block_end();
        } else if (which == "else") {
          expect_block_end();
          n->bodies.push_back(parse_body({"endif"}));
          next();
          expect_block_end();
          break;
        } else {
          expect_block_end();
          break;
        }
      }
    } else if (k == "for") {
      n->kind = Node::For;
      n->targets = parse_targets();
      if (!is_name("in")) fail(peek(), concat("expected 'in', got ", describe(peek())));
      next();
      n->expr = parse_or_cond(/*allow_if=*/false);
      if (is_name("if")) {
        next();
        n->cond = parse_expr();
      }
      if (is_name("recursive")) fail(peek(), "recursive for loops are not supported");
      expect_block_end();
      ++loop_depth_;
      n->bodies.push_back(parse_body({"else", "endfor"}));
      --loop_depth_;
      if (next().text == "else") {
        expect_block_end();
        n->bodies.push_back(parse_body({"endfor"}));
        next();
      }
      expect_block_end();
    } else if (k == "set") {
      n->targets = parse_targets();
      if (n->targets.size() == 1 && is_op(".")) {
        next();
        n->attr = expect_name();
      }
      if (is_op("=")) {
        next();
        n->kind = Node::Set;
        n->expr = parse_tuple_or_expr();
        expect_block_end();
      } else {
        if (n->targets.size() != 1 || !n->attr.empty()) fail(peek(), "expected '='");
        n->kind = Node::SetBlock;
        expect_block_end();
        n->bodies.push_back(parse_body({"endset"}));
        next();
        expect_block_end();
      }
    } else if (k == "macro") {
      n->kind = Node::Macro;
      n->targets.push_back(expect_name());
      n->params = parse_params();
      expect_block_end();
      int outer_loops = std::exchange(loop_depth_, 0);  // a macro body is not inside the loop
      n->bodies.push_back(parse_body({"endmacro"}));
      loop_depth_ = outer_loops;
      next();
      expect_block_end();
    } else if (k == "call") {
      n->kind = Node::CallBlock;
      if (is_op("(")) n->params = parse_params();
      const Token& at = peek();
      n->expr = parse_expr();
      if (n->expr->kind != Expr::Call) fail(at, "expected a macro call after 'call'");
      expect_block_end();
      int outer_loops = std::exchange(loop_depth_, 0);
      n->bodies.push_back(parse_body({"endcall"}));
      loop_depth_ = outer_loops;
      next();
      expect_block_end();
    } else if (k == "filter") {
      // {% filter upper %}...{% endfilter %}: a filter chain applied to the rendered body,
      // parsed as filters on a placeholder literal that the renderer replaces.
      n->kind = Node::FilterBlock;
      const Token& at = peek();
      ExprPtr e = make(Expr::Literal, at);
      e->value = std::string();
      n->expr = parse_filter_block_chain(std::move(e));
      expect_block_end();
      n->bodies.push_back(parse_body({"endfilter"}));
      next();
      expect_block_end();
    } else if (k == "break" || k == "continue") {
      if (loop_depth_ == 0) fail(kw, concat("'", k, "' outside a loop"));
      n->kind = k == "break" ? Node::Break : Node::Continue;
      expect_block_end();
    } else if (k == "generation") {
      // HF's {% generation %} marks assistant text for masks; it renders its body as is.
      expect_block_end();
      Body inner = parse_body({"endgeneration"});
      next();
      expect_block_end();
      for (auto& x : inner) body.push_back(std::move(x));
      return;
    } else {
      fail(kw, concat("unknown statement '", k, "'"));
    }
    body.push_back(std::move(n));
  }

  // `(a, b=default)` of a macro or call block.
  std::vector<std::pair<std::string, ExprPtr>> parse_params() {
    std::vector<std::pair<std::string, ExprPtr>> params;
    expect_op("(");
    while (!is_op(")")) {
      std::string p = expect_name();
      ExprPtr def;
      if (is_op("=")) {
        next();
        def = parse_expr();
      }
      params.emplace_back(p, std::move(def));
      if (!is_op(")")) expect_op(",");
    }
    next();
    return params;
  }

  // `name(args) | name2...` after {% filter: the first filter has no leading '|'.
  ExprPtr parse_filter_block_chain(ExprPtr subject) {
    const Token& at = peek();
    auto f = make(Expr::Filter, at);
    f->name = expect_name();
    if (!is_known_filter(f->name)) fail(at, concat("no filter named '", f->name, "'"));
    f->args.push_back(std::move(subject));
    if (is_op("(")) parse_args(*f);
    return parse_filters(deepen(std::move(f), at));
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> out;
    bool paren = is_op("(");
    if (paren) next();
    out.push_back(expect_name());
    while (is_op(",")) {
      next();
      out.push_back(expect_name());
    }
    if (paren) expect_op(")");
    return out;
  }

  // ---- expressions (Jinja2 precedence, loosest first) ----------------------------------
  // `a, b` at statement level builds a list (Jinja2's tuple).
  ExprPtr parse_tuple_or_expr() {
    const Token& at = peek();
    ExprPtr first = parse_expr();
    if (!is_op(",")) return first;
    auto list = make(Expr::ListLit, at);
    list->tuple = true;
    list->args.push_back(std::move(first));
    while (is_op(",")) {
      next();
      list->args.push_back(parse_expr());
    }
    return deepen(std::move(list), at);
  }

  ExprPtr parse_expr() { return parse_or_cond(true); }

  ExprPtr parse_or_cond(bool allow_if) {
    const Token& at = peek();
    DepthGuard guard(this, at);
    ExprPtr e = parse_or();
    while (allow_if && is_name("if")) {
      next();
      auto c = make(Expr::Cond, at);
      c->args.push_back(parse_or());
      c->args.push_back(std::move(e));
      if (is_name("else")) {
        next();
        c->args.push_back(parse_or_cond(true));
      } else {
        c->args.push_back(nullptr);
      }
      e = deepen(std::move(c), at);
    }
    return e;
  }

  ExprPtr binary(const Token& at, const std::string& op, ExprPtr l, ExprPtr r) {
    auto b = make(Expr::Binary, at);
    b->name = op;
    b->args.push_back(std::move(l));
    b->args.push_back(std::move(r));
    return deepen(std::move(b), at);
  }

  // Operator chains (1+1+1..., x|f|f|f..., a.b.c...) build trees as deep as they are long;
  // bound that depth so that rendering and destroying them cannot overflow the stack.
  ExprPtr deepen(ExprPtr e, const Token& at) {
    int d = 0;
    for (const auto& c : e->args)
      if (c) d = std::max(d, c->depth);
    for (const auto& kv : e->kwargs) d = std::max(d, kv.second->depth);
    e->depth = d + 1;
    if (e->depth > kMaxExprDepth) fail(at, "expression nested too deeply");
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      const Token& at = next();
      e = binary(at, "or", std::move(e), parse_and());
    }
    return e;
  }
  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      const Token& at = next();
      e = binary(at, "and", std::move(e), parse_not());
    }
    return e;
  }
  ExprPtr parse_not() {
    if (is_name("not")) {
      const Token& at = next();
      DepthGuard guard(this, at);
      auto u = make(Expr::Unary, at);
      u->name = "not";
      u->args.push_back(parse_not());
      return u;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    const Token& start = peek();
    ExprPtr first = parse_math1();
    ExprPtr e;  // the Compare node once an operator is seen
    while (true) {
      const Token& at = peek();
      std::string op;
      if (at.kind == Tok::Op && (at.text == "==" || at.text == "!=" || at.text == "<" ||
                                 at.text == ">" || at.text == "<=" || at.text == ">=")) {
        op = at.text;
        next();
      } else if (is_name("in")) {
        op = "in";
        next();
      } else if (is_name("not") && is_name("in", 1)) {
        op = "not in";
        next();
        next();
      } else {
        return e ? std::move(e) : std::move(first);
      }
      if (!e) {
        e = make(Expr::Compare, start);
        e->args.push_back(std::move(first));
      }
      e->ops.push_back(op);
      e->args.push_back(parse_math1());
      e = deepen(std::move(e), at);
    }
  }
  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& at = next();
      e = binary(at, at.text, std::move(e), parse_concat());
    }
    return e;
  }
  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      const Token& at = next();
      e = binary(at, "~", std::move(e), parse_math2());
    }
    return e;
  }
  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& at = next();
      e = binary(at, at.text, std::move(e), parse_pow());
    }
    return e;
  }
  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      const Token& at = next();
      e = binary(at, "**", std::move(e), parse_unary(true));
    }
    return e;
  }
  ExprPtr parse_unary(bool with_filter) {
    const Token& at = peek();
    DepthGuard guard(this, at);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      next();
      e = make(Expr::Unary, at);
      e->name = at.text;
      e->args.push_back(parse_unary(false));
      e = deepen(std::move(e), at);
    } else {
      e = parse_postfix(parse_primary());
    }
    return with_filter ? parse_filters(std::move(e)) : std::move(e);
  }

  ExprPtr parse_primary() {
    const Token& at = next();
    switch (at.kind) {
      case Tok::Name: {
        const std::string& n = at.text;
        if (n == "true" || n == "True" || n == "false" || n == "False") {
          auto e = make(Expr::Literal, at);
          e->value = n == "true" || n == "True";
          return e;
        }
        if (n == "none" || n == "None") {
          auto e = make(Expr::Literal, at);
          e->value = None{};
          return e;
        }
        auto e = make(Expr::Name, at);
        e->name = n;
        return e;
      }
      case Tok::String: {
        auto e = make(Expr::Literal, at);
        std::string s = at.text;
        while (peek().kind == Tok::String) s += next().text;  // "a" "b" is "ab"
        e->value = std::move(s);
        return e;
      }
      case Tok::Int: {
        auto e = make(Expr::Literal, at);
        std::int64_t v = 0;
        auto r = std::from_chars(at.text.data(), at.text.data() + at.text.size(), v);
        if (r.ec != std::errc()) fail(at, "integer literal out of range");
        e->value = v;
        return e;
      }
      case Tok::Float: {
        auto e = make(Expr::Literal, at);
        e->value = std::strtod(at.text.c_str(), nullptr);
        return e;
      }
      case Tok::Op:
        if (at.text == "(") {
          if (is_op(")")) {
            next();
            auto empty = make(Expr::ListLit, at);  // () is the empty tuple
            empty->tuple = true;
            return empty;
          }
          ExprPtr e = parse_expr();
          if (is_op(",")) {
            auto list = make(Expr::ListLit, at);
            list->tuple = true;
            list->args.push_back(std::move(e));
            while (is_op(",")) {
              next();
              if (is_op(")")) break;
              list->args.push_back(parse_expr());
            }
            e = deepen(std::move(list), at);
          }
          expect_op(")");
          return e;
        }
        if (at.text == "[") {
          auto e = make(Expr::ListLit, at);
          while (!is_op("]")) {
            e->args.push_back(parse_expr());
            if (!is_op("]")) expect_op(",");
          }
          next();
          return deepen(std::move(e), at);
        }
        if (at.text == "{") {
          auto e = make(Expr::DictLit, at);
          while (!is_op("}")) {
            e->args.push_back(parse_expr());
            expect_op(":");
            e->args.push_back(parse_expr());
            if (!is_op("}")) expect_op(",");
          }
          next();
          return deepen(std::move(e), at);
        }
        break;
      default: break;
    }
    fail(at, concat("unexpected ", describe(at)));
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      const Token& at = peek();
      if (is_op(".")) {
        next();
        auto a = make(Expr::Attr, at);
        if (peek().kind == Tok::Int) {  // x.0 is x[0]
          a->kind = Expr::Item;
          a->args.push_back(std::move(e));
          a->args.push_back(parse_primary());
        } else {
          a->name = expect_name();
          a->args.push_back(std::move(e));
        }
        e = deepen(std::move(a), at);
      } else if (is_op("[")) {
        next();
        e = deepen(parse_subscript(std::move(e), at), at);
      } else if (is_op("(")) {
        e = deepen(parse_call(std::move(e), Expr::Call, at), at);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj, const Token& at) {
    ExprPtr parts[3];
    int part = 0;
    bool slice = false;
    while (true) {
      if (is_op("]")) break;
      if (is_op(":")) {
        next();
        slice = true;
        if (++part > 2) fail(peek(), "too many ':' in slice");
        continue;
      }
      if (parts[part]) fail(peek(), "expected ':' or ']'");
      parts[part] = parse_expr();
    }
    next();
    if (!slice) {
      if (!parts[0]) fail(at, "expected an index");
      auto e = make(Expr::Item, at);
      e->args.push_back(std::move(obj));
      e->args.push_back(std::move(parts[0]));
      return e;
    }
    auto e = make(Expr::Slice, at);
    e->args.push_back(std::move(obj));
    for (auto& p : parts) e->args.push_back(std::move(p));
    return e;
  }

  // `(` args `)` into a node whose args[0] is already set by the caller.
  void parse_args(Expr& e) {
    expect_op("(");
    while (!is_op(")")) {
      if (peek().kind == Tok::Name && is_op("=", 1)) {
        std::string k = next().text;
        next();
        e.kwargs.emplace_back(k, parse_expr());
      } else {
        if (!e.kwargs.empty()) fail(peek(), "positional argument follows keyword argument");
        e.args.push_back(parse_expr());
      }
      if (!is_op(")")) expect_op(",");
    }
    next();
  }

  ExprPtr parse_call(ExprPtr callee, Expr::Kind kind, const Token& at) {
    auto e = make(kind, at);
    e->args.push_back(std::move(callee));
    parse_args(*e);
    return e;
  }

  ExprPtr parse_filters(ExprPtr e) {
    while (true) {
      const Token& at = peek();
      if (is_op("|")) {
        next();
        auto f = make(Expr::Filter, at);
        const Token& name_tok = peek();
        f->name = expect_name();
        if (!is_known_filter(f->name)) fail(name_tok, concat("no filter named '", f->name, "'"));
        f->args.push_back(std::move(e));
        if (is_op("(")) parse_args(*f);
        e = deepen(std::move(f), at);
      } else if (is_name("is")) {
        next();
        auto t = make(Expr::Test, at);
        if (is_name("not")) {
          next();
          t->negated = true;
        }
        const Token& name_tok = peek();
        t->name = expect_name();
        if (!is_known_test(t->name)) fail(name_tok, concat("no test named '", t->name, "'"));
        t->args.push_back(std::move(e));
        if (is_op("(")) {
          parse_args(*t);
        } else if (peek().kind == Tok::String || peek().kind == Tok::Int ||
                   peek().kind == Tok::Float || is_op("[") || is_op("{") ||
                   (peek().kind == Tok::Name && !is_name("else") && !is_name("or") &&
                    !is_name("and") && !is_name("if") && !is_name("in") && !is_name("is") &&
                    !is_name("not"))) {
          // `x is divisibleby 3`, `x is sameas none`: one bare argument.
          t->args.push_back(parse_postfix(parse_primary()));
        }
        e = deepen(std::move(t), at);
      } else if (is_op("(")) {
        e = deepen(parse_call(std::move(e), Expr::Call, at), at);
      } else {
        return e;
      }
    }
  }

  const std::vector<Token>& t_;
  std::string_view name_;
  size_t i_ = 0;
  int depth_ = 0;
  std::vector<Token> open_;  // statements being parsed, innermost last, for error messages
  int loop_depth_ = 0;  // enclosing for bodies: where break/continue may stand
};

}  // namespace

Body parse_tokens(const std::vector<Token>& tokens, std::string_view name) {
  return Parser(tokens, name).parse_template();
}

}  // namespace fk::chat::detail
