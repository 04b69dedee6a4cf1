// Jinja2's built-in filters and tests that chat templates use, with Jinja2's argument
// names and defaults (e.g. sort and unique ignore case unless case_sensitive=true).
#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "fk/status.h"
#include "text/template/render.h"
#include "text/template/unicode.h"

namespace fk::chat::detail {
namespace {

bool flag(const CallArgs& a, size_t i, const char* name, bool dflt) {
  const Value* v = a.at(i, name);
  return v ? truthy(*v) : dflt;
}

std::string lower(const std::string& s) { return utf8_lower(s); }

// Dotted attribute path ("function.name") or integer index, as Jinja2's attribute= args.
Value attribute_of(const Value& x, const std::string& path) {
  Value cur = x;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (cur.is_dict()) {
      const Value* v = cur.as_dict().find(part);
      cur = v ? *v : Value(Undefined{concat("'dict object' has no attribute '", part, "'")});
    } else if (cur.is_list() && !part.empty() && std::isdigit((unsigned char)part[0])) {
      size_t i = std::stoul(part);
      cur = i < cur.as_list().size() ? cur.as_list()[i] : Value(Undefined{});
    } else {
      return Undefined{concat("'", type_name(cur), " object' has no attribute '", part, "'")};
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

Value sort_key(const Value& x, bool case_sensitive) {
  if (!case_sensitive && x.is_string()) return lower(x.as_string());
  return x;
}

std::vector<Value> items_of(Renderer& r, const Value& x) {
  if (x.is_list()) return x.as_list();
  if (x.is_undefined()) return {};
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
  template_error(concat("'", type_name(x), "' object is not iterable"));
}

std::string indent_text(const std::string& s, const std::string& pad, bool first, bool blank) {
  std::string out;
  size_t start = 0;
  bool first_line = true;
  while (true) {
    size_t nl = s.find('\n', start);
    std::string line = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    bool indent = first_line ? first : (blank || !line.empty());
    // Jinja2 checks "blank" lines after stripping; only whitespace counts as blank.
    if (!first_line && !blank) {
      bool all_space = std::all_of(line.begin(), line.end(), [](char c) { return std::isspace((unsigned char)c); });
      indent = !all_space;
    }
    if (indent) out += pad;
    out += line;
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
    first_line = false;
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

Value select(Renderer& r, const Value& x, const CallArgs& a, bool by_attr, bool keep) {
  CallArgs test_args;
  size_t next = 0;
  std::string attr;
  if (by_attr) {
    if (a.positional.empty()) template_error("selectattr/rejectattr need an attribute name");
    attr = to_str(a.positional[0]);
    next = 1;
  }
  std::string test;
  if (next < a.positional.size()) test = to_str(a.positional[next++]);
  for (size_t i = next; i < a.positional.size(); ++i) test_args.positional.push_back(a.positional[i]);
  List out;
  for (const auto& item : items_of(r, x)) {
    Value subject = by_attr ? attribute_of(item, attr) : item;
    bool pass = test.empty() ? truthy(subject) : apply_test(r, test, subject, test_args);
    if (pass == keep) out.push_back(item);
  }
  return out;
}

}  // namespace

bool is_known_filter(const std::string& name) {
  static const char* names[] = {"default", "d", "safe", "length", "count", "tojson", "string", "trim",
                                "upper", "lower", "capitalize", "title", "replace", "join", "first",
                                "last", "list", "items", "reverse", "sort", "unique", "selectattr",
                                "rejectattr", "select", "reject", "map", "escape", "e", "indent",
                                "abs", "round", "int", "float", "sum", "min", "max"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

bool is_known_test(const std::string& name) {
  static const char* names[] = {"defined", "undefined", "none", "string", "number", "integer", "float",
                                "boolean", "true", "false", "mapping", "iterable", "sequence",
                                "callable", "lower", "upper", "escaped", "even", "odd", "divisibleby",
                                "eq", "equalto", "==", "ne", "!=", "lt", "lessthan", "<", "gt",
                                "greaterthan", ">", "le", "<=", "ge", ">=", "sameas", "in"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

Value apply_filter(Renderer& r, const std::string& name, const Value& x, const CallArgs& a) {
  const std::string& f = name;
  if (f == "default" || f == "d") {
    const Value* dflt = a.at(0, "default_value");
    bool boolean = flag(a, 1, "boolean", false);
    if (x.is_undefined() || (boolean && !truthy(x))) return dflt ? *dflt : Value(std::string());
    return x;
  }
  if (f == "safe") return x;
  // Jinja2's Undefined prints as "" and iterates as empty, so most filters accept it; those
  // that need a real value (JSON, numbers) fail the way Jinja2 does.
  if (x.is_undefined() && (f == "tojson" || f == "abs" || f == "round")) r.undefined_error(x);
  if (f == "length" || f == "count") {
    if (x.is_string()) return std::int64_t(code_points(x.as_string()).size());
    if (x.is_list()) return std::int64_t(x.as_list().size());
    if (x.is_dict()) return std::int64_t(x.as_dict().entries.size());
    if (x.is_undefined()) return std::int64_t(0);
    template_error(concat("object of type '", type_name(x), "' has no len()"));
  }
  if (f == "tojson") {
    // HF's tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
    JsonStyle st;
    if (const Value* ind = a.at(1, "indent"); ind && !ind->is_none()) {
      if (!ind->is_int()) template_error("tojson: indent must be an integer");
      st.indent = int(std::clamp<std::int64_t>(ind->as_int(), 0, 64));
    }
    // Jinja2's own tojson takes indent first; HF's takes ensure_ascii first. Templates pass
    // these by keyword (tojson(indent=2)), so positional use follows HF.
    if (const Value* v = a.at(0, "ensure_ascii")) st.ensure_ascii = truthy(*v);
    if (const Value* v = a.at(2, "separators"); v && v->is_list() && v->as_list().size() == 2) {
      st.item_separator = to_str(v->as_list()[0]);
      st.key_separator = to_str(v->as_list()[1]);
    }
    if (const Value* v = a.at(3, "sort_keys")) st.sort_keys = truthy(*v);
    std::string s = to_json_text(x, st);
    r.check_size(s.size());
    return s;
  }
  if (f == "string") return to_str(x);
  if (f == "trim") {
    CallArgs m;
    if (const Value* chars = a.at(0, "chars")) m.positional.push_back(*chars);
    return r.call(get_method(Value(to_str(x)), "strip"), m);
  }
  if (f == "upper" || f == "lower" || f == "capitalize")
    return r.call(get_method(Value(to_str(x)), f), {});
  if (f == "title") {
    // Jinja2's title: a word starts after whitespace or one of -({[<, not after any non-letter.
    return utf8_title_words(to_str(x));
  }
  if (f == "replace") {
    CallArgs m;
    for (size_t i = 0; i < a.positional.size(); ++i) m.positional.push_back(i < 2 ? Value(to_str(a.positional[i])) : a.positional[i]);
    if (const Value* c = a.kw("count")) m.positional.push_back(*c);
    Value out = r.call(get_method(Value(to_str(x)), "replace"), m);
    r.check_size(out.as_string().size());
    return out;
  }
  if (f == "join") {
    const Value* sep = a.at(0, "d");
    const Value* attr = a.at(1, "attribute");
    std::string out;
    bool first = true;
    for (const auto& item : items_of(r, x)) {
      if (!first) out += sep ? to_str(*sep) : "";
      first = false;
      out += to_str(attr ? attribute_of(item, to_str(*attr)) : item);
      r.check_size(out.size());
    }
    return out;
  }
  if (f == "first" || f == "last") {
    std::vector<Value> items = items_of(r, x);
    if (items.empty()) return Undefined{"No first item, sequence was empty."};
    return f == "first" ? items.front() : items.back();
  }
  if (f == "list") return List(items_of(r, x));
  if (f == "items") {
    if (x.is_undefined()) return List{};
    if (!x.is_dict()) template_error("items filter needs a mapping");
    return r.call(get_method(x, "items"), {});
  }
  if (f == "reverse") {
    if (x.is_string()) {
      auto cps = code_points(x.as_string());
      std::string out;
      for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += *it;
      return out;
    }
    std::vector<Value> items = items_of(r, x);
    std::reverse(items.begin(), items.end());
    return List(std::move(items));
  }
  if (f == "sort") {
    bool rev = flag(a, 0, "reverse", false), cs = flag(a, 1, "case_sensitive", false);
    const Value* attr = a.at(2, "attribute");
    std::vector<Value> items = items_of(r, x);
    auto key = [&](const Value& v) { return sort_key(attr ? attribute_of(v, to_str(*attr)) : v, cs); };
    std::stable_sort(items.begin(), items.end(), [&](const Value& p, const Value& q) {
      return rev ? less(key(q), key(p)) : less(key(p), key(q));
    });
    return List(std::move(items));
  }
  if (f == "unique") {
    bool cs = flag(a, 0, "case_sensitive", false);
    const Value* attr = a.at(1, "attribute");
    List out;
    std::vector<Value> seen;
    for (const auto& item : items_of(r, x)) {
      Value k = sort_key(attr ? attribute_of(item, to_str(*attr)) : item, cs);
      bool dup = std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, k); });
      if (!dup) {
        seen.push_back(k);
        out.push_back(item);
      }
    }
    return out;
  }
  if (f == "selectattr" || f == "rejectattr") return select(r, x, a, true, f == "selectattr");
  if (f == "select" || f == "reject") return select(r, x, a, false, f == "select");
  if (f == "map") {
    List out;
    const Value* attr = a.kw("attribute");
    const Value* dflt = a.kw("default");
    for (const auto& item : items_of(r, x)) {
      if (attr) {
        Value v = attribute_of(item, to_str(*attr));
        out.push_back(v.is_undefined() && dflt ? *dflt : v);
      } else {
        if (a.positional.empty()) template_error("map needs a filter name or attribute=");
        CallArgs rest;
        rest.positional.assign(a.positional.begin() + 1, a.positional.end());
        rest.keyword = a.keyword;
        out.push_back(apply_filter(r, to_str(a.positional[0]), item, rest));
      }
    }
    return out;
  }
  if (f == "escape" || f == "e") return html_escape(to_str(x));
  if (f == "indent") {
    const Value* w = a.at(0, "width");
    std::string pad = !w ? std::string(4, ' ') : w->is_string() ? w->as_string() : std::string(size_t(std::max<std::int64_t>(0, w->as_int())), ' ');
    return indent_text(to_str(x), pad, flag(a, 1, "first", false), flag(a, 2, "blank", false));
  }
  if (f == "abs") {
    if (x.is_bool()) return std::int64_t(x.as_bool());
    if (x.is_int()) {
      if (x.as_int() == INT64_MIN) template_error("integer overflow in abs");
      return std::abs(x.as_int());
    }
    if (x.is_float()) return std::fabs(x.as_number());
    template_error(concat("bad operand type for abs(): '", type_name(x), "'"));
  }
  if (f == "round") {
    const Value* p = a.at(0, "precision");
    const Value* m = a.at(1, "method");
    std::string method = m ? to_str(*m) : "common";
    std::int64_t digits = p ? p->as_int() : 0;
    if (!x.is_float()) {
      if (x.is_int() && method == "common") return x;  // Python: round(5, n) stays the int 5
      if (x.is_bool() && method == "common") return std::int64_t(x.as_bool());
      if (!x.is_number() && !x.is_bool()) template_error("round needs a number");
    }
    if (method == "common" && digits >= 0 && digits < 300) {
      // Python rounds the exact binary value correctly (2.675 -> 2.67, 2.5 -> 2.0); so
      // does printf's conversion, which rounds the exact value half-to-even.
      char buf[512];
      std::snprintf(buf, sizeof buf, "%.*f", int(digits), x.as_number());
      return std::strtod(buf, nullptr);
    }
    double scale = std::pow(10.0, double(digits));
    double v = x.as_number() * scale;
    v = method == "floor" ? std::floor(v) : method == "ceil" ? std::ceil(v) : std::nearbyint(v);
    return v / scale;
  }
  if (f == "int") {
    const Value* dflt = a.at(0, "default");
    if (x.is_int()) return x;
    if (x.is_bool()) return std::int64_t(x.as_bool());
    if (x.is_float()) return std::int64_t(std::trunc(x.as_number()));
    if (x.is_string()) {
      const std::string& s = x.as_string();
      char* end = nullptr;
      long long v = std::strtoll(s.c_str(), &end, 10);
      if (end && end != s.c_str() && *end == 0) return std::int64_t(v);
      double d = std::strtod(s.c_str(), &end);
      if (end && end != s.c_str() && *end == 0) return std::int64_t(std::trunc(d));
    }
    return dflt ? *dflt : Value(std::int64_t(0));
  }
  if (f == "float") {
    const Value* dflt = a.at(0, "default");
    if (x.is_number() || x.is_bool()) return x.as_number();
    if (x.is_string()) {
      char* end = nullptr;
      double d = std::strtod(x.as_string().c_str(), &end);
      if (end && end != x.as_string().c_str() && *end == 0) return d;
    }
    return dflt ? *dflt : Value(0.0);
  }
  if (f == "sum" || f == "min" || f == "max") {
    std::vector<Value> items = items_of(r, x);
    if (f == "sum") {
      Value total = a.at(1, "start") ? *a.at(1, "start") : Value(std::int64_t(0));
      const Value* attr = a.at(0, "attribute");
      for (const auto& item : items) {
        Value v = attr ? attribute_of(item, to_str(*attr)) : item;
        if (!v.is_number() && !v.is_bool()) template_error("sum of non-numbers");
        total = (total.is_int() && (v.is_int() || v.is_bool())) ? Value(total.as_int() + (v.is_bool() ? v.as_bool() : v.as_int()))
                                                               : Value(total.as_number() + v.as_number());
      }
      return total;
    }
    if (items.empty()) return Undefined{"No aggregated item, sequence was empty."};
    Value best = items[0];
    for (const auto& item : items)
      if (f == "min" ? less(sort_key(item, false), sort_key(best, false)) : less(sort_key(best, false), sort_key(item, false))) best = item;
    return best;
  }
  template_error(concat("no filter named '", f, "'"));
}

bool apply_test(Renderer& r, const std::string& name, const Value& x, const CallArgs& a) {
  const std::string& t = name;
  if (t == "defined") return !x.is_undefined();
  if (t == "undefined") return x.is_undefined();
  if (t == "none") return x.is_none();
  if (t == "string") return x.is_string();
  if (t == "number") return x.is_number() || x.is_bool();
  if (t == "integer") return x.is_int();
  if (t == "float") return x.is_float();
  if (t == "boolean") return x.is_bool();
  if (t == "true") return x.is_bool() && x.as_bool();
  if (t == "false") return x.is_bool() && !x.as_bool();
  if (t == "mapping") return x.is_dict();
  if (t == "iterable") return x.is_list() || x.is_dict() || x.is_string() || x.is_undefined();
  if (t == "sequence") return x.is_list() || x.is_dict() || x.is_string() || x.is_undefined();
  if (t == "callable") return x.is_function();
  if (t == "lower" || t == "upper") {  // Jinja2: str(value).islower() / .isupper()
    const std::string s = to_str(x);
    bool any = false;
    for (unsigned char c : s) {
      if (std::isalpha(c)) any = true;
      if (t == "lower" ? std::isupper(c) : std::islower(c)) return false;
    }
    return any;
  }
  if (t == "escaped") return false;
  if (x.is_undefined() && (t == "even" || t == "odd" || t == "divisibleby")) r.undefined_error(x);
  if (t == "even" || t == "odd") {  // Jinja2: value % 2, so bools and floats work too
    if (x.is_float()) {
      double m = std::fmod(x.as_number(), 2.0);
      if (m < 0) m += 2.0;
      return t == "even" ? m == 0.0 : m == 1.0;
    }
    if (!x.is_int() && !x.is_bool()) template_error(concat("unsupported operand type(s) for %: '", type_name(x), "' and 'int'"));
    std::int64_t v = x.is_bool() ? std::int64_t(x.as_bool()) : x.as_int();
    return ((v % 2 + 2) % 2 == 0) == (t == "even");
  }
  const Value* other = a.at(0, "value");
  if (t == "divisibleby") {
    if (!other || !other->is_int() || other->as_int() == 0 || !x.is_int()) template_error("divisibleby needs integers");
    return x.as_int() % other->as_int() == 0;
  }
  if (!other) template_error(concat("test '", t, "' needs an argument"));
  if (t == "eq" || t == "equalto" || t == "==") return equals(x, *other);
  if (t == "ne" || t == "!=") return !equals(x, *other);
  if (t == "lt" || t == "lessthan" || t == "<") return less(x, *other);
  if (t == "gt" || t == "greaterthan" || t == ">") return less(*other, x);
  if (t == "le" || t == "<=") return !less(*other, x);
  if (t == "ge" || t == ">=") return !less(x, *other);
  if (t == "sameas") return equals(x, *other) && x.v.index() == other->v.index();
  if (t == "in") {
    if (other->is_string()) return x.is_string() && other->as_string().find(x.as_string()) != std::string::npos;
    if (other->is_list())
      return std::any_of(other->as_list().begin(), other->as_list().end(), [&](const Value& v) { return equals(x, v); });
    if (other->is_dict()) return x.is_string() && other->as_dict().find(x.as_string());
    return false;
  }
  template_error(concat("no test named '", t, "'"));
}

}  // namespace fk::chat::detail
