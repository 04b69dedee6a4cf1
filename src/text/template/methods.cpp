// Python str and dict methods that chat templates call (message.content.strip(),
// tool.items(), d.get(k, default)...), plus slicing. Mutating methods (list.append,
// dict.update) are absent on purpose: HF renders in Jinja2's immutable sandbox, which
// refuses them too.
#include <algorithm>
#include <cctype>

#include "fk/status.h"
#include "text/template/render.h"
#include "text/template/unicode.h"

namespace fk::chat::detail {

std::vector<std::string> code_points(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    n = std::min(n, s.size() - i);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

namespace {

bool py_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
  auto strip_char = [&](char c) {
    if (!chars || chars->is_none()) return py_space(c);
    return chars->as_string().find(c) != std::string::npos;
  };
  size_t b = 0, e = s.size();
  if (left)
    while (b < e && strip_char(s[b])) ++b;
  if (right)
    while (e > b && strip_char(s[e - 1])) --e;
  return s.substr(b, e - b);
}

Value split(const std::string& s, const Value* sep, std::int64_t maxsplit) {
  List out;
  if (!sep || sep->is_none()) {  // runs of whitespace, no empty parts
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && py_space(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && std::int64_t(out.size()) == maxsplit) {
        std::string rest = s.substr(i);
        while (!rest.empty() && py_space(rest.back())) rest.pop_back();
        out.push_back(rest);
        break;
      }
      size_t j = i;
      while (j < s.size() && !py_space(s[j])) ++j;
      out.push_back(s.substr(i, j - i));
      i = j;
    }
    return out;
  }
  const std::string& d = sep->as_string();
  if (d.empty()) template_error("empty separator");
  size_t start = 0;
  while (true) {
    size_t p = s.find(d, start);
    if (p == std::string::npos || (maxsplit >= 0 && std::int64_t(out.size()) == maxsplit)) {
      out.push_back(s.substr(start));
      break;
    }
    out.push_back(s.substr(start, p - start));
    start = p + d.size();
  }
  return out;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to,
                        std::int64_t count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` around every character
    std::int64_t done = 0;
    for (const auto& cp : code_points(s)) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      out += cp;
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  size_t start = 0;
  std::int64_t done = 0;
  while (count < 0 || done < count) {
    size_t p = s.find(from, start);
    if (p == std::string::npos) break;
    out.append(s, start, p - start);
    out += to;
    start = p + from.size();
    ++done;
  }
  out.append(s, start, std::string::npos);
  return out;
}


std::string str_arg(const CallArgs& a, size_t i, const char* name, const char* method) {
  const Value* v = a.at(i, name);
  if (!v || !v->is_string()) template_error(concat(method, "() needs a string argument"));
  return v->as_string();
}

Value string_method(const std::string& s, const std::string& name, const CallArgs& a) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const Value* chars = a.at(0, "chars");
    if (chars && !chars->is_none() && !chars->is_string()) template_error("strip arg must be None or str");
    return strip(s, chars, name != "rstrip", name != "lstrip");
  }
  if (name == "split") {
    const Value* m = a.at(1, "maxsplit");
    return split(s, a.at(0, "sep"), m ? m->as_int() : -1);
  }
  if (name == "startswith" || name == "endswith") {
    const Value* p = a.at(0, "prefix");
    std::vector<std::string> options;
    if (p && p->is_list()) {
      for (const auto& x : p->as_list()) options.push_back(to_str(x));
    } else {
      options.push_back(str_arg(a, 0, "prefix", name.c_str()));
    }
    for (const auto& o : options) {
      bool hit = name == "startswith" ? s.compare(0, o.size(), o) == 0 && s.size() >= o.size()
                                      : s.size() >= o.size() && s.compare(s.size() - o.size(), o.size(), o) == 0;
      if (hit) return true;
    }
    return false;
  }
  if (name == "replace") {
    const Value* c = a.at(2, "count");
    return replace_all(s, str_arg(a, 0, "old", "replace"), str_arg(a, 1, "new", "replace"), c ? c->as_int() : -1);
  }
  if (name == "upper") return utf8_upper(s);
  if (name == "lower") return utf8_lower(s);
  if (name == "title") return utf8_title(s);
  if (name == "capitalize") return utf8_capitalize(s);
  if (name == "find") {
    size_t p = s.find(str_arg(a, 0, "sub", "find"));
    return p == std::string::npos ? std::int64_t(-1) : std::int64_t(p);
  }
  if (name == "count") {
    std::string sub = str_arg(a, 0, "sub", "count");
    if (sub.empty()) return std::int64_t(code_points(s).size() + 1);
    std::int64_t n = 0;
    for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
    return n;
  }
  if (name == "join") {
    const Value* items = a.at(0, "iterable");
    std::string out;
    if (items && items->is_list()) {
      bool first = true;
      for (const auto& x : items->as_list()) {
        if (!first) out += s;
        first = false;
        out += to_str(x);
      }
    }
    return out;
  }
  if (name == "splitlines") {
    List out;
    size_t start = 0;
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] == '\n') {
        out.push_back(s.substr(start, i - start));
        start = i + 1;
      }
    if (start < s.size()) out.push_back(s.substr(start));
    return out;
  }
  if (name == "isdigit" || name == "isalpha" || name == "isspace" || name == "isalnum") {
    if (s.empty()) return false;
    for (unsigned char c : s) {
      bool ok = name == "isdigit" ? std::isdigit(c) : name == "isalpha" ? std::isalpha(c)
                : name == "isspace" ? py_space(char(c)) : std::isalnum(c);
      if (!ok) return false;
    }
    return true;
  }
  if (name == "format") {
    // Positional "{}" / "{0}" and named "{key}" fields; no format specs.
    std::string out;
    size_t auto_index = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '{' && i + 1 < s.size() && s[i + 1] == '{') { out += '{'; ++i; continue; }
      if (s[i] == '}' && i + 1 < s.size() && s[i + 1] == '}') { out += '}'; ++i; continue; }
      if (s[i] != '{') { out += s[i]; continue; }
      size_t close = s.find('}', i);
      if (close == std::string::npos) template_error("Single '{' encountered in format string");
      std::string field = s.substr(i + 1, close - i - 1);
      const Value* v = nullptr;
      if (field.empty()) v = auto_index < a.positional.size() ? &a.positional[auto_index++] : nullptr;
      else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
        size_t k = std::stoul(field);
        v = k < a.positional.size() ? &a.positional[k] : nullptr;
      } else {
        v = a.kw(field);
      }
      if (!v) template_error(concat("format: no value for field '{", field, "}'"));
      out += to_str(*v);
      i = close;
    }
    return out;
  }
  template_error(concat("'str' object has no method '", name, "'"));
}

Value dict_method(const Value& self, const std::string& name, const CallArgs& a) {
  const Dict& d = self.as_dict();
  if (name == "items") {
    List out;
    for (const auto& [k, v] : d.entries) {
      Value pair = List{Value(k), v};
      pair.tuple = true;
      out.push_back(std::move(pair));
    }
    return out;
  }
  if (name == "keys" || name == "values") {
    List out;
    for (const auto& [k, v] : d.entries) out.push_back(name == "keys" ? Value(k) : v);
    return out;
  }
  // get
  const Value* key = a.at(0, "key");
  if (!key) template_error("get expected at least 1 argument");
  if (key->is_string())
    if (const Value* v = d.find(key->as_string())) return *v;
  const Value* def = a.at(1, "default");
  return def ? *def : Value(None{});
}

}  // namespace

Value get_method(const Value& x, const std::string& name) {
  static const char* str_methods[] = {"strip", "lstrip", "rstrip", "split", "startswith",
                                      "endswith", "replace", "upper", "lower", "title",
                                      "capitalize", "find", "count", "join", "splitlines",
                                      "isdigit", "isalpha", "isspace", "isalnum", "format"};
  if (x.is_string()) {
    for (const char* m : str_methods)
      if (name == m) {
        std::string s = x.as_string();
        return Function([s, name](const CallArgs& a) { return string_method(s, name, a); });
      }
  } else if (x.is_dict()) {
    if (name == "items" || name == "keys" || name == "values" || name == "get")
      return Function([x, name](const CallArgs& a) { return dict_method(x, name, a); });
  }
  return Undefined{};
}

Value slice_value(const Value& x, const Value& start, const Value& stop, const Value& step) {
  if (x.is_undefined()) template_error("cannot slice an undefined value");
  std::vector<std::string> cps;
  std::int64_t n;
  if (x.is_string()) {
    cps = code_points(x.as_string());
    n = std::int64_t(cps.size());
  } else if (x.is_list()) {
    n = std::int64_t(x.as_list().size());
  } else {
    template_error(concat("'", type_name(x), "' object is not subscriptable"));
  }
  auto get = [](const Value& v, std::int64_t dflt) {
    if (v.is_none()) return dflt;
    if (!v.is_int()) template_error("slice indices must be integers or None");
    return v.as_int();
  };
  std::int64_t st = get(step, 1);
  if (st == 0) template_error("slice step cannot be zero");
  st = std::clamp<std::int64_t>(st, -(n + 1), n + 1);  // same slice, no overflow stepping
  // Python's slice.indices(): clamp into range, defaults depend on the step's sign.
  auto norm = [&](const Value& v, std::int64_t dflt) {
    if (v.is_none()) return dflt;
    std::int64_t i = get(v, 0);
    if (i < 0) i += n;
    if (st > 0) return std::clamp<std::int64_t>(i, 0, n);
    return std::clamp<std::int64_t>(i, -1, n - 1);
  };
  std::int64_t b = norm(start, st > 0 ? 0 : n - 1), e = norm(stop, st > 0 ? n : -1);
  List items;
  std::string s;
  for (std::int64_t i = b; st > 0 ? i < e : i > e; i += st) {
    if (x.is_string()) s += cps[size_t(i)];
    else items.push_back(x.as_list()[size_t(i)]);
  }
  if (x.is_string()) return s;
  return items;
}

}  // namespace fk::chat::detail
