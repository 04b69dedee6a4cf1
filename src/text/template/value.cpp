#include "text/template/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "fk/status.h"

namespace fk::chat::detail {

void template_error(const std::string& msg) { throw Error(msg, FK_ERR_INVALID_ARGUMENT); }

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(const std::string& key, Value v) {
  for (auto& [k, old] : entries)
    if (k == key) {
      old = std::move(v);
      return;
    }
  entries.emplace_back(key, std::move(v));
}

const Value* CallArgs::kw(std::string_view name) const {
  for (const auto& [k, v] : keyword)
    if (k == name) return &v;
  return nullptr;
}

bool truthy(const Value& x) {
  switch (x.v.index()) {
    case 0: case 1: return false;
    case 2: return x.as_bool();
    case 3: return x.as_int() != 0;
    case 4: return std::get<double>(x.v) != 0.0;
    case 5: return !x.as_string().empty();
    case 6: return !x.as_list().empty();
    case 7: return x.as_dict().is_namespace || !x.as_dict().entries.empty();
    default: return true;
  }
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci is "[-]D[.DDD]e[+-]XX": split into sign, digits and decimal exponent.
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  auto epos = sci.find('e');
  int exp = std::stoi(sci.substr(epos + 1));
  std::string digits;
  for (char c : sci.substr(0, epos))
    if (c != '.') digits += c;
  int decpt = exp + 1;  // digits before the decimal point
  // Python's repr switches to exponent notation outside 1e-4 <= |d| < 1e16.
  if (decpt > -4 && decpt <= 16) {
    std::string out;
    if (decpt <= 0) {
      out = "0." + std::string(-decpt, '0') + digits;
    } else if (decpt >= int(digits.size())) {
      out = digits + std::string(decpt - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, decpt) + "." + digits.substr(decpt);
    }
    return sign + out;
  }
  std::string out = digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char ebuf[16];
  std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  return sign + out + ebuf;
}

static std::string str_repr(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == q) out += std::string("\\") + char(q);
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else {
      out += char(c);
    }
  }
  out += q;
  return out;
}

std::string repr(const Value& x) {
  if (x.is_string()) return str_repr(x.as_string());
  if (x.is_list()) {
    std::string out = x.tuple ? "(" : "[";
    bool first = true;
    for (const auto& e : x.as_list()) {
      if (!first) out += ", ";
      first = false;
      out += repr(e);
    }
    if (x.tuple && x.as_list().size() == 1) out += ",";
    return out + (x.tuple ? ")" : "]");
  }
  if (x.is_dict()) {
    if (x.as_dict().is_namespace) return "<Namespace>";
    std::string out = "{";
    bool first = true;
    for (const auto& [k, v] : x.as_dict().entries) {
      if (!first) out += ", ";
      first = false;
      out += str_repr(k) + ": " + repr(v);
    }
    return out + "}";
  }
  return to_str(x);
}

std::string to_str(const Value& x) {
  switch (x.v.index()) {
    case 0: return "";
    case 1: return "None";
    case 2: return x.as_bool() ? "True" : "False";
    case 3: return std::to_string(x.as_int());
    case 4: return float_repr(std::get<double>(x.v));
    case 5: return x.as_string();
    case 8: return "<function>";
    default: return repr(x);
  }
}

bool equals(const Value& a, const Value& b) {
  // Python: True == 1, 1 == 1.0.
  bool an = a.is_number() || a.is_bool(), bn = b.is_number() || b.is_bool();
  if (an && bn) {
    if (a.is_float() || b.is_float()) return a.as_number() == b.as_number();
    auto ai = a.is_bool() ? std::int64_t(a.as_bool()) : a.as_int();
    auto bi = b.is_bool() ? std::int64_t(b.as_bool()) : b.as_int();
    return ai == bi;
  }
  if (a.v.index() != b.v.index()) return false;
  switch (a.v.index()) {
    case 0: case 1: return true;
    case 5: return a.as_string() == b.as_string();
    case 6: {
      const auto &la = a.as_list(), &lb = b.as_list();
      if (la.size() != lb.size()) return false;
      for (size_t i = 0; i < la.size(); ++i)
        if (!equals(la[i], lb[i])) return false;
      return true;
    }
    case 7: {
      const auto &da = a.as_dict(), &db = b.as_dict();
      if (da.is_namespace || db.is_namespace) return &da == &db;
      if (da.entries.size() != db.entries.size()) return false;
      for (const auto& [k, v] : da.entries) {
        const Value* o = db.find(k);
        if (!o || !equals(v, *o)) return false;
      }
      return true;
    }
    default: return &a.as_function() == &b.as_function();
  }
}

bool less(const Value& a, const Value& b) {
  bool an = a.is_number() || a.is_bool(), bn = b.is_number() || b.is_bool();
  if (an && bn) {
    if (a.is_int() && b.is_int()) return a.as_int() < b.as_int();
    return a.as_number() < b.as_number();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_list() && b.is_list()) {
    const auto &la = a.as_list(), &lb = b.as_list();
    for (size_t i = 0; i < la.size() && i < lb.size(); ++i) {
      if (less(la[i], lb[i])) return true;
      if (less(lb[i], la[i])) return false;
    }
    return la.size() < lb.size();
  }
  template_error(concat("'<' not supported between instances of '", type_name(a), "' and '",
                        type_name(b), "'"));
}

std::string type_name(const Value& x) {
  static const char* names[] = {"Undefined", "NoneType", "bool", "int", "float",
                                "str", "list", "dict", "function"};
  return names[x.v.index()];
}

static void json_string(const std::string& s, bool ensure_ascii, std::string& out) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    if (ensure_ascii && c >= 0x80) {
      // Decode one UTF-8 sequence; code points past the BMP become surrogate pairs.
      unsigned cp = 0;
      size_t n = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
      cp = n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : n == 4 ? (c & 0x07) : c;
      for (size_t k = 1; k < n && i + 1 < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[++i]) & 0x3F);
      char b[16];
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(b, sizeof b, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
      } else {
        std::snprintf(b, sizeof b, "\\u%04x", cp);
      }
      out += b;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += char(c);
        }
    }
  }
  out += '"';
}

static void json_value(const Value& x, const JsonStyle& st, int depth, std::string& out) {
  const int indent = st.indent;
  if (depth > 512) template_error("tojson: value nested too deeply");
  auto newline = [&](int d) {
    if (indent >= 0) {
      out += '\n';
      out.append(size_t(indent) * size_t(d), ' ');
    }
  };
  // Python's separators: ", " and ": " without indent, "," and ": " with it.
  const std::string item_sep = !st.item_separator.empty() ? st.item_separator : indent >= 0 ? "," : ", ";
  const std::string key_sep = !st.key_separator.empty() ? st.key_separator : ": ";
  switch (x.v.index()) {
    case 1: out += "null"; return;
    case 2: out += x.as_bool() ? "true" : "false"; return;
    case 3: out += std::to_string(x.as_int()); return;
    case 4: {
      double d = std::get<double>(x.v);
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : float_repr(d);
      return;
    }
    case 5: json_string(x.as_string(), st.ensure_ascii, out); return;
    case 6: {
      const auto& l = x.as_list();
      if (l.empty()) { out += "[]"; return; }
      out += "[";
      for (size_t i = 0; i < l.size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        json_value(l[i], st, depth + 1, out);
      }
      newline(depth);
      out += "]";
      return;
    }
    case 7: {
      const auto& d = x.as_dict();
      if (d.is_namespace) break;
      if (d.entries.empty()) { out += "{}"; return; }
      out += "{";
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& e : d.entries) entries.push_back(&e);
      if (st.sort_keys)
        std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
      bool first = true;
      for (const auto* e : entries) {
        if (!first) out += item_sep;
        first = false;
        newline(depth + 1);
        json_string(e->first, st.ensure_ascii, out);
        out += key_sep;
        json_value(e->second, st, depth + 1, out);
      }
      newline(depth);
      out += "}";
      return;
    }
    default: break;
  }
  template_error(concat("Object of type ", type_name(x), " is not JSON serializable"));
}

std::string to_json_text(const Value& x, const JsonStyle& style) {
  std::string out;
  json_value(x, style, 0, out);
  return out;
}

}  // namespace fk::chat::detail
