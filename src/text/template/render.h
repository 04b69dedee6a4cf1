// Runs a parsed template: evaluates expressions with Python semantics, executes
// statements, and enforces the bounds of TemplateOptions (output size, loop iterations,
// call depth) so that a hostile template fails with an error instead of exhausting memory.
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "text/chat_template.h"
#include "text/template/ast.h"

namespace fk::chat::detail {

class Renderer;

// Filters and tests (filters.cpp) and methods of str/dict (methods.cpp).
Value apply_filter(Renderer& r, const std::string& name, const Value& x, const CallArgs& args);
bool apply_test(Renderer& r, const std::string& name, const Value& x, const CallArgs& args);
// x.name for str and dict methods (bound to x); Undefined if x has no such method.
Value get_method(const Value& x, const std::string& name);
// Python's x[start:stop:step] for lists and strings (strings by code point).
Value slice_value(const Value& x, const Value& start, const Value& stop, const Value& step);
// Code points of a UTF-8 string, each as its own string (Python iterates str this way).
std::vector<std::string> code_points(const std::string& s);

class Renderer {
 public:
  // context: a Dict whose entries become the template's variables.
  Renderer(const Program& program, const TemplateOptions& options, const Value& context);
  std::string run();

  const TemplateOptions& options() const { return opt_; }
  // Fails when a string about to be built exceeds the output limit.
  void check_size(size_t bytes) const;
  void count_iterations(size_t n);
  // Calls a filter/test/macro-visible function value.
  Value call(const Value& fn, const CallArgs& args);
  [[noreturn]] void undefined_error(const Value& u) const;

 private:
  enum class Flow { Normal, Break, Continue };
  using Frame = std::unordered_map<std::string, Value>;

  Flow exec(const Body& body, std::string& out);
  Flow exec_node(const Node& n, std::string& out);
  Flow exec_for(const Node& n, std::string& out);
  void append(std::string& out, const std::string& s);

  Value eval(const Expr& e);
  Value eval_binary(const Expr& e);
  bool compare(const std::string& op, const Value& a, const Value& b);
  Value get_attr(const Value& obj, const std::string& name);
  Value get_item(const Value& obj, const Value& key);
  CallArgs eval_args(const Expr& e, size_t first);
  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v);
  Value make_macro(const Node& n);
  std::vector<Value> iterate(const Value& x);
  void install_globals();

  // Bounds the C++ recursion of eval/exec together (macros inside deep expressions inside
  // macros...), whatever mix of constructs a template uses to recurse.
  struct StackGuard {
    Renderer* r;
    explicit StackGuard(Renderer* r_) : r(r_) {
      if (++r->stack_depth_ > kMaxStackDepth) {
        --r->stack_depth_;
        template_error("template recursion too deep");
      }
    }
    ~StackGuard() { --r->stack_depth_; }
  };
  static constexpr int kMaxStackDepth = 3000;
  int stack_depth_ = 0;

  const Program& program_;
  TemplateOptions opt_;
  std::vector<Frame> frames_;  // frames_[0]: globals and the context
  size_t iterations_ = 0;
  int call_depth_ = 0;
  int line_ = 0;  // of the node being executed, for runtime error messages
};

}  // namespace fk::chat::detail
