#include "text/template/render.h"

#include <climits>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <utility>

#include "fk/status.h"

namespace fk::chat::detail {

namespace {

// Python's arithmetic operands: bools count as ints.
bool numeric(const Value& v) { return v.is_number() || v.is_bool(); }
std::int64_t int_of(const Value& v) { return v.is_bool() ? std::int64_t(v.as_bool()) : v.as_int(); }
bool intlike(const Value& v) { return v.is_int() || v.is_bool(); }

[[noreturn]] void operand_error(const std::string& op, const Value& a, const Value& b) {
  template_error(concat("unsupported operand type(s) for ", op, ": '", type_name(a), "' and '",
                        type_name(b), "'"));
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

Renderer::Renderer(const Program& program, const TemplateOptions& options,
                   const Value& context)
    : program_(program), opt_(options) {
  frames_.emplace_back();
  install_globals();
  if (context.is_dict())
    for (const auto& [k, v] : context.as_dict().entries) frames_[0][k] = v;
}

void Renderer::install_globals() {
  Frame& g = frames_[0];
  g["raise_exception"] = Function([](const CallArgs& a) -> Value {
    template_error(a.positional.empty() ? std::string("raise_exception") : to_str(a.positional[0]));
  });
  g["range"] = Function([this](const CallArgs& a) -> Value {
    std::int64_t start = 0, stop = 0, step = 1;
    auto arg = [&](size_t i) {
      if (!intlike(a.positional[i])) template_error("range() arguments must be integers");
      return int_of(a.positional[i]);
    };
    if (a.positional.size() == 1) {
      stop = arg(0);
    } else if (a.positional.size() == 2 || a.positional.size() == 3) {
      start = arg(0);
      stop = arg(1);
      if (a.positional.size() == 3) step = arg(2);
    } else {
      template_error("range() takes 1 to 3 arguments");
    }
    if (step == 0) template_error("range() arg 3 must not be zero");
    __int128 span = step > 0 ? __int128(stop) - start : __int128(start) - stop;
    __int128 st = step > 0 ? __int128(step) : -__int128(step);
    std::int64_t n = span > 0 ? std::int64_t((span + st - 1) / st) : 0;
    count_iterations(size_t(n));  // a range is as costly as the loop over it
    List out;
    out.reserve(size_t(n));
    for (std::int64_t i = 0; i < n; ++i) out.push_back(start + i * step);
    return out;
  });
  auto make_dict = [](const CallArgs& a) -> Value {
    Dict d;
    for (const auto& p : a.positional)
      if (p.is_dict())
        for (const auto& [k, v] : p.as_dict().entries) d.set(k, v);
    for (const auto& [k, v] : a.keyword) d.set(k, v);
    return d;
  };
  g["dict"] = Function(make_dict);
  g["namespace"] = Function([make_dict](const CallArgs& a) -> Value {
    Value v = make_dict(a);
    v.as_dict().is_namespace = true;
    return v;
  });
  g["strftime_now"] = Function([this](const CallArgs& a) -> Value {
    if (a.positional.empty() || !a.positional[0].is_string()) template_error("strftime_now(format) needs a format string");
    auto now = opt_.clock ? opt_.clock() : std::chrono::system_clock::now();
    std::time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[512];
    size_t n = std::strftime(buf, sizeof buf, a.positional[0].as_string().c_str(), &tm);
    return std::string(buf, n);
  });
}

std::string Renderer::run() {
  std::string out;
  try {
    exec(program_.body, out);
  } catch (const Error& e) {
    throw Error(concat(program_.name, ":", line_, ": ", e.what()), e.code());
  }
  return out;
}

void Renderer::check_size(size_t bytes) const {
  if (bytes > opt_.max_output_bytes)
    template_error(concat("output exceeds the limit of ", opt_.max_output_bytes, " bytes"));
}

void Renderer::count_iterations(size_t n) {
  iterations_ += n;
  if (n > opt_.max_loop_iterations || iterations_ > opt_.max_loop_iterations)
    template_error(concat("more than ", opt_.max_loop_iterations, " loop iterations"));
}

void Renderer::append(std::string& out, const std::string& s) {
  check_size(out.size() + s.size());
  out += s;
}

[[noreturn]] void Renderer::undefined_error(const Value& u) const {
  template_error(u.undefined_hint().empty() ? std::string("undefined value") : u.undefined_hint());
}

// ---- statements ------------------------------------------------------------------------

Renderer::Flow Renderer::exec(const Body& body, std::string& out) {
  for (const auto& n : body) {
    Flow f = exec_node(*n, out);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Renderer::Flow Renderer::exec_node(const Node& n, std::string& out) {
  StackGuard guard(this);
  if (n.line) line_ = n.line;
  switch (n.kind) {
    case Node::Text: append(out, n.text); return Flow::Normal;
    case Node::Output: {
      Value v = eval(*n.expr);
      append(out, to_str(v));
      return Flow::Normal;
    }
    case Node::If:
      for (size_t i = 0; i < n.conds.size(); ++i)
        if (truthy(eval(*n.conds[i]))) return exec(n.bodies[i], out);
      if (n.bodies.size() > n.conds.size()) return exec(n.bodies.back(), out);
      return Flow::Normal;
    case Node::For: return exec_for(n, out);
    case Node::Set: {
      Value v = eval(*n.expr);
      if (!n.attr.empty()) {
        Value ns = lookup(n.targets[0]);
        if (!ns.is_dict() || !ns.as_dict().is_namespace)
          template_error(concat("cannot assign attribute on non-namespace object '", n.targets[0], "'"));
        ns.as_dict().set(n.attr, std::move(v));
      } else if (n.targets.size() == 1) {
        assign(n.targets[0], std::move(v));
      } else {
        std::vector<Value> parts = iterate(v);
        if (parts.size() != n.targets.size())
          template_error(concat("cannot unpack ", parts.size(), " values into ", n.targets.size(), " names"));
        for (size_t i = 0; i < parts.size(); ++i) assign(n.targets[i], parts[i]);
      }
      return Flow::Normal;
    }
    case Node::SetBlock: {
      std::string inner;
      exec(n.bodies[0], inner);
      assign(n.targets[0], std::move(inner));
      return Flow::Normal;
    }
    case Node::Macro: assign(n.targets[0], make_macro(n)); return Flow::Normal;
    case Node::CallBlock: {
      // caller() renders the block body in the scope of the call site (a snapshot of the
      // frames: namespaces are shared objects, so their updates still show).
      const Node* node = &n;
      auto scope = std::make_shared<std::vector<Frame>>(frames_);
      Value caller = Function([this, node, scope](const CallArgs& a) -> Value {
        Frame f;
        for (size_t i = 0; i < node->params.size(); ++i) {
          const auto& [pname, def] = node->params[i];
          if (i < a.positional.size()) f[pname] = a.positional[i];
          else if (const Value* k = a.kw(pname)) f[pname] = *k;
          else if (def) f[pname] = eval(*def);
          else f[pname] = Undefined{concat("'", pname, "' is undefined")};
        }
        std::vector<Frame> saved = std::exchange(frames_, *scope);
        frames_.push_back(std::move(f));
        std::string out;
        try {
          exec(node->bodies[0], out);
        } catch (...) {
          frames_ = std::move(saved);
          throw;
        }
        frames_ = std::move(saved);
        return out;
      });
      const Expr& call_expr = *n.expr;
      Value fn = eval(*call_expr.args[0]);
      CallArgs args = eval_args(call_expr, 1);
      args.keyword.emplace_back("caller", std::move(caller));
      append(out, to_str(this->call(fn, args)));
      return Flow::Normal;
    }
    case Node::FilterBlock: {
      std::string inner;
      exec(n.bodies[0], inner);
      // n.expr is a filter chain whose innermost subject is a placeholder: rebuild the
      // chain's evaluation over the rendered body.
      std::vector<const Expr*> chain;
      for (const Expr* e = n.expr.get(); e->kind == Expr::Filter; e = e->args[0].get()) chain.push_back(e);
      Value v = std::move(inner);
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) v = apply_filter(*this, (*it)->name, v, eval_args(**it, 1));
      append(out, to_str(v));
      return Flow::Normal;
    }
    case Node::Break: return Flow::Break;
    case Node::Continue: return Flow::Continue;
  }
  return Flow::Normal;
}

Renderer::Flow Renderer::exec_for(const Node& n, std::string& out) {
  std::vector<Value> items = iterate(eval(*n.expr));
  auto bind = [&](Frame& f, const Value& item) {
    if (n.targets.size() == 1) {
      f[n.targets[0]] = item;
      return;
    }
    std::vector<Value> parts = iterate(item);
    if (parts.size() != n.targets.size())
      template_error(concat("cannot unpack ", parts.size(), " values into ", n.targets.size(), " names"));
    for (size_t i = 0; i < parts.size(); ++i) f[n.targets[i]] = parts[i];
  };
  if (n.cond) {  // `for x in xs if c`: filtered before the loop, so loop.length counts kept items
    std::vector<Value> kept;
    for (auto& item : items) {
      count_iterations(1);
      frames_.emplace_back();
      bind(frames_.back(), item);
      bool keep = truthy(eval(*n.cond));
      frames_.pop_back();
      if (keep) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    if (n.bodies.size() > 1) {  // the else block has the loop's scope: its sets stay inside
      frames_.emplace_back();
      Flow f = exec(n.bodies[1], out);
      frames_.pop_back();
      return f;
    }
    return Flow::Normal;
  }
  const std::int64_t len = std::int64_t(items.size());
  for (std::int64_t i = 0; i < len; ++i) {
    count_iterations(1);
    frames_.emplace_back();  // each iteration has its own scope, as in Jinja2
    Frame& f = frames_.back();
    bind(f, items[i]);
    Dict loop;
    loop.set("index", i + 1);
    loop.set("index0", i);
    loop.set("revindex", len - i);
    loop.set("revindex0", len - i - 1);
    loop.set("first", i == 0);
    loop.set("last", i == len - 1);
    loop.set("length", len);
    loop.set("depth", 1);
    loop.set("depth0", 0);
    if (i > 0) loop.set("previtem", items[i - 1]);
    if (i + 1 < len) loop.set("nextitem", items[i + 1]);
    loop.set("cycle", Function([i](const CallArgs& a) -> Value {
      if (a.positional.empty()) template_error("no items for cycling given");
      return a.positional[size_t(i) % a.positional.size()];
    }));
    f["loop"] = std::move(loop);
    Flow flow = exec(n.bodies[0], out);
    frames_.pop_back();
    if (flow == Flow::Break) break;
  }
  return Flow::Normal;
}

Value Renderer::make_macro(const Node& n) {
  const Node* node = &n;
  return Function([this, node](const CallArgs& a) -> Value {
    if (++call_depth_ > opt_.max_call_depth) {
      --call_depth_;
      template_error(concat("macro calls nested deeper than ", opt_.max_call_depth));
    }
    Frame f;
    if (a.positional.size() > node->params.size())
      template_error(concat("macro '", node->targets[0], "' takes ", node->params.size(), " arguments"));
    for (size_t i = 0; i < node->params.size(); ++i) {
      const auto& [pname, def] = node->params[i];
      if (i < a.positional.size()) f[pname] = a.positional[i];
      else if (const Value* k = a.kw(pname)) f[pname] = *k;
      else if (def) f[pname] = eval(*def);
      else f[pname] = Undefined{concat("'", pname, "' is undefined")};
    }
    if (const Value* c = a.kw("caller")) f["caller"] = *c;  // from a {% call %} block
    for (const auto& [k, v] : a.keyword) {
      bool known = k == "caller";
      for (const auto& p : node->params) known = known || p.first == k;
      if (!known) template_error(concat("macro '", node->targets[0], "' takes no keyword argument '", k, "'"));
    }
    // The macro sees its arguments and the globals/context, not the caller's locals.
    std::vector<Frame> saved(std::make_move_iterator(frames_.begin() + 1),
                             std::make_move_iterator(frames_.end()));
    frames_.resize(1);
    frames_.push_back(std::move(f));
    std::string out;
    auto restore = [&] {
      frames_.resize(1);
      for (auto& s : saved) frames_.push_back(std::move(s));
      --call_depth_;
    };
    try {
      exec(node->bodies[0], out);
    } catch (...) {
      restore();
      throw;
    }
    restore();
    return out;
  });
}

Value Renderer::lookup(const std::string& name) const {
  for (size_t i = frames_.size(); i-- > 0;) {
    auto it = frames_[i].find(name);
    if (it != frames_[i].end()) return it->second;
  }
  return Undefined{concat("'", name, "' is undefined")};
}

void Renderer::assign(const std::string& name, Value v) { frames_.back()[name] = std::move(v); }

std::vector<Value> Renderer::iterate(const Value& x) {
  if (x.is_list()) return x.as_list();
  if (x.is_dict()) {
    std::vector<Value> keys;
    for (const auto& [k, v] : x.as_dict().entries) keys.emplace_back(k);
    return keys;
  }
  if (x.is_string()) {
    std::vector<Value> out;
    for (auto& cp : code_points(x.as_string())) out.emplace_back(std::move(cp));
    return out;
  }
  if (x.is_undefined()) return {};
  template_error(concat("'", type_name(x), "' object is not iterable"));
}

// ---- expressions -----------------------------------------------------------------------

CallArgs Renderer::eval_args(const Expr& e, size_t first) {
  CallArgs a;
  for (size_t i = first; i < e.args.size(); ++i) a.positional.push_back(eval(*e.args[i]));
  for (const auto& [k, v] : e.kwargs) a.keyword.emplace_back(k, eval(*v));
  return a;
}

Value Renderer::call(const Value& fn, const CallArgs& args) {
  if (fn.is_undefined()) undefined_error(fn);
  if (!fn.is_function()) template_error(concat("'", type_name(fn), "' object is not callable"));
  return fn.as_function()(args);
}

Value Renderer::get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) undefined_error(obj);
  if (obj.is_dict()) {
    const Dict& d = obj.as_dict();
    if (!d.is_namespace) {
      Value m = get_method(obj, name);  // Jinja2 tries Python attributes first: d.items is the method
      if (!m.is_undefined()) return m;
    }
    if (const Value* v = d.find(name)) return *v;
    return Undefined{concat("'", d.is_namespace ? "Namespace" : "dict", " object' has no attribute '", name, "'")};
  }
  Value m = get_method(obj, name);
  if (!m.is_undefined()) return m;
  return Undefined{concat("'", type_name(obj), " object' has no attribute '", name, "'")};
}

Value Renderer::get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) undefined_error(obj);
  if (obj.is_dict() && key.is_string()) {
    if (const Value* v = obj.as_dict().find(key.as_string())) return *v;
    return Undefined{concat("'dict object' has no attribute '", key.as_string(), "'")};
  }
  if ((obj.is_list() || obj.is_string()) && intlike(key)) {
    std::int64_t i = int_of(key);
    if (obj.is_list()) {
      const List& l = obj.as_list();
      std::int64_t n = std::int64_t(l.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return l[size_t(i)];
    } else {
      auto cps = code_points(obj.as_string());
      std::int64_t n = std::int64_t(cps.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return cps[size_t(i)];
    }
    return Undefined{concat("'", type_name(obj), " object' has no element ", int_of(key))};
  }
  if (key.is_string()) return get_attr(obj, key.as_string());  // Jinja2 falls back to getattr
  return Undefined{concat("'", type_name(obj), " object' has no element ", repr(key))};
}

Value Renderer::eval(const Expr& e) {
  StackGuard guard(this);
  switch (e.kind) {
    case Expr::Literal: return e.value;
    case Expr::Name: return lookup(e.name);
    case Expr::ListLit: {
      List l;
      for (const auto& x : e.args) l.push_back(eval(*x));
      Value v = std::move(l);
      v.tuple = e.tuple;
      return v;
    }
    case Expr::Compare: {
      Value left = eval(*e.args[0]);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.args[i + 1]);
        if (!compare(e.ops[i], left, right)) return false;
        left = std::move(right);
      }
      return true;
    }
    case Expr::DictLit: {
      Dict d;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value k = eval(*e.args[i]);
        d.set(k.is_string() ? k.as_string() : to_str(k), eval(*e.args[i + 1]));
      }
      return d;
    }
    case Expr::Attr: return get_attr(eval(*e.args[0]), e.name);
    case Expr::Item: {
      Value obj = eval(*e.args[0]);
      return get_item(obj, eval(*e.args[1]));
    }
    case Expr::Slice: {
      Value obj = eval(*e.args[0]);
      auto part = [&](size_t i) { return e.args[i] ? eval(*e.args[i]) : Value(None{}); };
      return slice_value(obj, part(1), part(2), part(3));
    }
    case Expr::Call: {
      Value fn = eval(*e.args[0]);
      return call(fn, eval_args(e, 1));
    }
    case Expr::Filter: {
      Value x = eval(*e.args[0]);
      return apply_filter(*this, e.name, x, eval_args(e, 1));
    }
    case Expr::Test: {
      // `x is defined` must not fail on an undefined x, so evaluate the subject plainly.
      Value x = eval(*e.args[0]);
      bool r = apply_test(*this, e.name, x, eval_args(e, 1));
      return r != e.negated;
    }
    case Expr::Unary: {
      Value x = eval(*e.args[0]);
      if (e.name == "not") return !truthy(x);
      if (x.is_undefined()) undefined_error(x);
      if (!numeric(x)) template_error(concat("bad operand type for unary ", e.name, ": '", type_name(x), "'"));
      if (e.name == "+") return x.is_bool() ? Value(int_of(x)) : x;
      if (x.is_float()) return -x.as_number();
      if (int_of(x) == INT64_MIN) template_error("integer overflow in unary -");
      return -int_of(x);
    }
    case Expr::Binary: return eval_binary(e);
    case Expr::Cond:
      if (truthy(eval(*e.args[0]))) return eval(*e.args[1]);
      if (e.args[2]) return eval(*e.args[2]);
      return Undefined{"the inline if-expression evaluated to false and no else section was defined"};
  }
  return Undefined{};
}

bool Renderer::compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "in" || op == "not in") {
    bool found = false;
    if (b.is_string()) {
      if (!a.is_string()) template_error(concat("'in <string>' requires string as left operand, not ", type_name(a)));
      found = b.as_string().find(a.as_string()) != std::string::npos;
    } else if (b.is_list()) {
      for (const auto& x : b.as_list()) found = found || equals(a, x);
    } else if (b.is_dict()) {
      found = a.is_string() && b.as_dict().find(a.as_string()) != nullptr;
    } else if (!b.is_undefined()) {
      template_error(concat("argument of type '", type_name(b), "' is not iterable"));
    }
    return found == (op == "in");
  }
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  if (op == "<") return less(a, b);
  if (op == ">") return less(b, a);
  if (op == "<=") return !less(b, a);
  if (op == ">=") return !less(a, b);
  template_error(concat("unknown comparison ", op));
}

Value Renderer::eval_binary(const Expr& e) {
  const std::string& op = e.name;
  Value a = eval(*e.args[0]);
  if (op == "and") return truthy(a) ? eval(*e.args[1]) : a;
  if (op == "or") return truthy(a) ? a : eval(*e.args[1]);
  Value b = eval(*e.args[1]);
  if (op == "~") {
    std::string s = to_str(a), t = to_str(b);
    check_size(s.size() + t.size());
    return s + t;
  }
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      check_size(a.as_string().size() + b.as_string().size());
      return a.as_string() + b.as_string();
    }
    if (a.is_list() && b.is_list()) {
      List l = a.as_list();
      l.insert(l.end(), b.as_list().begin(), b.as_list().end());
      return l;
    }
  }
  if (op == "*") {
    // Repetition: "ab" * 3, [x] * 3.
    const Value* seq = a.is_string() || a.is_list() ? &a : b.is_string() || b.is_list() ? &b : nullptr;
    const Value* count = seq == &a ? &b : &a;
    if (seq && intlike(*count)) {
      std::int64_t n = std::max<std::int64_t>(0, int_of(*count));
      size_t unit = seq->is_string() ? seq->as_string().size() : seq->as_list().size() * 16;
      if (unit == 0) n = 0;  // "" * 10**18 is "" without looping
      if (unit && size_t(n) > opt_.max_output_bytes / unit) check_size(opt_.max_output_bytes + 1);
      if (seq->is_string()) {
        std::string s;
        for (std::int64_t i = 0; i < n; ++i) s += seq->as_string();
        return s;
      }
      List l;
      for (std::int64_t i = 0; i < n; ++i) l.insert(l.end(), seq->as_list().begin(), seq->as_list().end());
      return l;
    }
  }
  if (!numeric(a) || !numeric(b)) operand_error(op, a, b);
  bool ints = intlike(a) && intlike(b);
  if (ints && (op == "+" || op == "-" || op == "*")) {
    // Python's ints are unbounded; ours are 64-bit, and overflow is an error, not UB.
    std::int64_t r = 0, x = int_of(a), y = int_of(b);
    bool overflow = op == "+" ? __builtin_add_overflow(x, y, &r)
                    : op == "-" ? __builtin_sub_overflow(x, y, &r) : __builtin_mul_overflow(x, y, &r);
    if (overflow) template_error(concat("integer overflow in ", x, " ", op, " ", y));
    return r;
  }
  if (op == "+") return a.as_number() + b.as_number();
  if (op == "-") return a.as_number() - b.as_number();
  if (op == "*") return a.as_number() * b.as_number();
  if (op == "/") {
    if (b.as_number() == 0) template_error("division by zero");
    return a.as_number() / b.as_number();
  }
  if (op == "//" || op == "%") {
    if (b.as_number() == 0) template_error(op == "%" ? "modulo by zero" : "integer division or modulo by zero");
    if (ints) {
      if (int_of(a) == INT64_MIN && int_of(b) == -1) template_error("integer overflow in //");
      std::int64_t q = floor_div(int_of(a), int_of(b));
      return op == "//" ? Value(q) : Value(int_of(a) - q * int_of(b));
    }
    double x = a.as_number(), y = b.as_number();
    double q = std::floor(x / y);
    return op == "//" ? Value(q) : Value(x - q * y);
  }
  if (op == "**") {
    if (ints && int_of(b) >= 0) {
      std::int64_t r = 1, base = int_of(a);
      for (std::int64_t i = 0; i < int_of(b); ++i) {
        if (__builtin_mul_overflow(r, base, &r)) template_error("integer overflow in **");
        if (r == 0 || r == 1) break;  // 0**n and 1**n: done; (-1)**n needs the parity
        if (r == -1) return (int_of(b) % 2) ? Value(std::int64_t(-1)) : Value(std::int64_t(1));
      }
      return r;
    }
    return std::pow(a.as_number(), b.as_number());
  }
  template_error(concat("unknown operator ", op));
}

}  // namespace fk::chat::detail
