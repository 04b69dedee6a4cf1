// The values a template computes with. They follow Python's semantics (what Jinja2 runs
// on), because chat templates are tested against Jinja2's output: str() of a list is its
// Python repr, 1/2 is 0.5, -7 % 3 is 2, an undefined variable renders empty.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace fk::chat::detail {

// Template errors carry only their message (no C++ source location): the message is what a
// user of the template needs, e.g. the text of raise_exception().
[[noreturn]] void template_error(const std::string& msg);

struct Value;
using List = std::vector<Value>;

// Insertion-ordered string-keyed map, like a Python dict built from JSON.
struct Dict {
  std::vector<std::pair<std::string, Value>> entries;
  bool is_namespace = false;  // namespace(): the one object `{% set ns.x %}` may assign to
  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value v);
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  const Value* kw(std::string_view name) const;
  // Argument i, or else the keyword argument `name` (nullptr when neither was given).
  const Value* at(size_t i, std::string_view name) const { return i < positional.size() ? &positional[i] : kw(name); }
};
using Function = std::function<Value(const CallArgs&)>;

// An undefined value remembers why it is undefined, for the error raised when it is used
// in a way Jinja2 refuses (attribute access, arithmetic, calls).
struct Undefined {
  std::string hint;
};
struct None {};

struct Value {
  std::variant<Undefined, None, bool, std::int64_t, double, std::string,
               std::shared_ptr<List>, std::shared_ptr<Dict>, std::shared_ptr<Function>>
      v;

  bool tuple = false;  // a Python tuple: a list that prints as (a, b)

  Value() = default;
  Value(Undefined u) : v(std::move(u)) {}
  Value(None) : v(None{}) {}
  Value(bool b) : v(b) {}
  Value(int i) : v(std::int64_t{i}) {}
  Value(std::int64_t i) : v(i) {}
  Value(double d) : v(d) {}
  Value(std::string s) : v(std::move(s)) {}
  Value(const char* s) : v(std::string(s)) {}
  Value(List l) : v(std::make_shared<List>(std::move(l))) {}
  Value(Dict d) : v(std::make_shared<Dict>(std::move(d))) {}
  Value(Function f) : v(std::make_shared<Function>(std::move(f))) {}

  bool is_undefined() const { return v.index() == 0; }
  bool is_none() const { return v.index() == 1; }
  bool is_bool() const { return v.index() == 2; }
  bool is_int() const { return v.index() == 3; }
  bool is_float() const { return v.index() == 4; }
  bool is_number() const { return is_int() || is_float(); }  // bools are not, unlike Python
  bool is_string() const { return v.index() == 5; }
  bool is_list() const { return v.index() == 6; }
  bool is_dict() const { return v.index() == 7; }
  bool is_function() const { return v.index() == 8; }

  bool as_bool() const { return std::get<bool>(v); }
  std::int64_t as_int() const { return std::get<std::int64_t>(v); }
  double as_number() const { return is_int() ? double(as_int()) : is_bool() ? as_bool() : std::get<double>(v); }
  const std::string& as_string() const { return std::get<std::string>(v); }
  List& as_list() const { return *std::get<std::shared_ptr<List>>(v); }
  Dict& as_dict() const { return *std::get<std::shared_ptr<Dict>>(v); }
  const Function& as_function() const { return *std::get<std::shared_ptr<Function>>(v); }
  const std::string& undefined_hint() const { return std::get<Undefined>(v).hint; }
};

// Python's bool(x); Undefined is falsy.
bool truthy(const Value& x);
// Python's str(x) as Jinja2 prints it: None -> "None", lists and dicts as their repr,
// Undefined -> "".
std::string to_str(const Value& x);
// Python's repr(x) (strings quoted like Python quotes them).
std::string repr(const Value& x);
// Python's float repr: shortest round-trip digits, "1.0", "1e-05", "1e+16", "inf".
std::string float_repr(double d);
// Python's == (1 == 1.0, containers element-wise, different types unequal).
bool equals(const Value& a, const Value& b);
// Python's < for numbers, strings and lists; throws for anything else.
bool less(const Value& a, const Value& b);
// The Python type name Jinja2 names in errors ("str", "list", "dict", "NoneType"...).
std::string type_name(const Value& x);

// JSON into values, keeping object key order (ordered_json keeps the file's order, as
// Python's json does; nlohmann::json sorts keys).
template <class Json>
Value from_json(const Json& j) {
  switch (j.type()) {
    case Json::value_t::boolean: return j.template get<bool>();
    case Json::value_t::number_integer: return j.template get<std::int64_t>();
    case Json::value_t::number_unsigned: return std::int64_t(j.template get<std::uint64_t>());
    case Json::value_t::number_float: return j.template get<double>();
    case Json::value_t::string: return j.template get<std::string>();
    case Json::value_t::array: {
      List l;
      l.reserve(j.size());
      for (const auto& e : j) l.push_back(from_json(e));
      return l;
    }
    case Json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it) d.entries.emplace_back(it.key(), from_json(it.value()));
      return d;
    }
    default: return None{};
  }
}
// The arguments of Python's json.dumps that HF's tojson filter passes on; the defaults are
// HF's (ensure_ascii=False, unlike json.dumps).
struct JsonStyle {
  int indent = -1;  // < 0: all on one line
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::string item_separator, key_separator;  // empty: Python's defaults for the indent
};
// json.dumps(x, ...). Throws for values JSON cannot hold (undefined, functions).
std::string to_json_text(const Value& x, const JsonStyle& style = {});

}  // namespace fk::chat::detail
