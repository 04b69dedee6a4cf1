#include "text/template/lexer.h"

#include <cctype>

#include "fk/status.h"

namespace fk::chat::detail {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

class Lexer {
 public:
  Lexer(std::string_view src, std::string_view name, const LexOptions& opt)
      : src_(src), name_(name), opt_(opt) {}

  std::vector<Token> run() {
    enum class Lead { None, StripAll, TrimNewline } lead = Lead::None;
    while (pos_ < src_.size()) {
      size_t tag = find_tag(pos_);
      size_t start = pos_;
      // Whitespace control that the previous tag asked for applies to this text's start.
      if (lead == Lead::StripAll)
        while (start < tag && is_space(src_[start])) ++start;
      else if (lead == Lead::TrimNewline && start < tag && src_[start] == '\n')
        ++start;
      lead = Lead::None;
      std::string text(src_.substr(start, tag - start));
      if (tag == src_.size()) {
        advance_to(start);
        emit_text(std::move(text), start);
        advance_to(tag);  // so that the end-of-template token names the last line
        break;
      }
      char kind = src_[tag + 1];  // '{', '%' or '#'
      char mod = tag + 2 < src_.size() ? src_[tag + 2] : 0;
      if (mod == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (kind != '{' && mod != '+' && opt_.lstrip_blocks) {
        // lstrip_blocks: drop spaces/tabs between a line start and a block or comment tag.
        size_t l = text.rfind('\n');
        l = l == std::string::npos ? 0 : l + 1;
        bool line_start = l > 0 || start == 0 || src_[start - 1] == '\n';
        bool blank = l < text.size();
        for (size_t i = l; i < text.size(); ++i) blank = blank && is_space(text[i]);
        if (line_start && blank) text.resize(l);
      }
      emit_text(std::move(text), start);
      advance_to(tag);
      size_t body = tag + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
      if (kind == '#') {
        size_t end = src_.find("#}", body);
        if (end == std::string_view::npos) fail(line_, col_, "unterminated comment");
        bool strip = end > body && src_[end - 1] == '-';
        bool keep = end > body && src_[end - 1] == '+';
        advance_to(end + 2);
        lead = strip ? Lead::StripAll : (opt_.trim_blocks && !keep) ? Lead::TrimNewline : Lead::None;
        continue;
      }
      if (kind == '%' && try_raw(body, lead)) continue;
      int tl = line_, tc = col_;
      tokens_.push_back({kind == '{' ? Tok::VarBegin : Tok::BlockBegin, "", tl, tc});
      advance_to(body);
      char end_mod = lex_inside(kind == '{' ? '}' : '%', tl, tc);
      if (end_mod == '-') lead = Lead::StripAll;
      else if (kind == '%' && end_mod != '+' && opt_.trim_blocks) lead = Lead::TrimNewline;
    }
    tokens_.push_back({Tok::Eof, "", line_, col_});
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void fail(int line, int col, const std::string& what) {
    throw Error(concat(name_, ":", line, ":", col, ": ", what), FK_ERR_INVALID_ARGUMENT);
  }

  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i)
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return src_.size();
  }

  // Moves pos_ forward, keeping line_/col_ in step.
  void advance_to(size_t p) {
    for (; pos_ < p; ++pos_) {
      if (src_[pos_] == '\n') {
        ++line_;
        col_ = 1;
      } else {
        ++col_;
      }
    }
  }

  void emit_text(std::string text, size_t) {
    if (!text.empty()) tokens_.push_back({Tok::Text, std::move(text), line_, col_});
  }

  // Matches `[-+]? \s* word \s* [-+]? %}` at p (after "{%"), returning the end position.
  size_t match_simple_tag(size_t p, std::string_view word, char* end_mod) const {
    while (p < src_.size() && is_space(src_[p])) ++p;
    if (src_.substr(p, word.size()) != word) return 0;
    p += word.size();
    if (p < src_.size() && (std::isalnum((unsigned char)src_[p]) || src_[p] == '_')) return 0;
    while (p < src_.size() && is_space(src_[p])) ++p;
    *end_mod = 0;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) *end_mod = src_[p++];
    if (src_.substr(p, 2) != "%}") return 0;
    return p + 2;
  }

  template <class Lead>
  bool try_raw(size_t body, Lead& lead) {
    char mod = 0;
    size_t after = match_simple_tag(body, "raw", &mod);
    if (!after) return false;
    int l = line_, c = col_;
    size_t content = after;
    if (mod == '-')
      while (content < src_.size() && is_space(src_[content])) ++content;
    for (size_t p = src_.find("{%", content); p != std::string_view::npos; p = src_.find("{%", p + 2)) {
      size_t q = p + 2;
      char begin_mod = q < src_.size() && (src_[q] == '-' || src_[q] == '+') ? src_[q++] : 0;
      char end_mod = 0;
      size_t end = match_simple_tag(q, "endraw", &end_mod);
      if (!end) continue;
      std::string text(src_.substr(content, p - content));
      if (begin_mod == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (begin_mod != '+' && opt_.lstrip_blocks) {  // endraw is a block tag too
        size_t l = text.rfind('\n');
        l = l == std::string::npos ? 0 : l + 1;
        bool line_start = l > 0 || src_[content - 1] == '\n';
        bool blank = l < text.size();
        for (size_t k = l; k < text.size(); ++k) blank = blank && is_space(text[k]);
        if (line_start && blank) text.resize(l);
      }
      advance_to(content);
      emit_text(std::move(text), content);
      advance_to(end);
      lead = end_mod == '-' ? Lead::StripAll
             : (opt_.trim_blocks && end_mod != '+') ? Lead::TrimNewline : Lead::None;
      return true;
    }
    fail(l, c, "unterminated raw block (missing endraw)");
  }

  // Tokens up to the closing "}}" or "%}"; returns the closing modifier ('-', '+' or 0).
  char lex_inside(char closer, int tag_line, int tag_col) {
    int depth = 0;  // brackets: "}}" inside {'a': {'b': 1}} does not close the tag
    while (true) {
      while (pos_ < src_.size() && is_space(src_[pos_])) advance_to(pos_ + 1);
      if (pos_ >= src_.size())
        fail(tag_line, tag_col, closer == '}' ? "unexpected end of template, expected '}}'"
                                               : "unexpected end of template, expected '%}'");
      std::string_view rest = src_.substr(pos_);
      if (depth == 0) {
        for (char m : {'-', '+', '\0'}) {
          std::string end;
          if (m) end += m;
          end += closer;
          end += '}';
          if (m == '+' && closer == '}') continue;
          if (rest.substr(0, end.size()) == end) {
            tokens_.push_back({closer == '}' ? Tok::VarEnd : Tok::BlockEnd, "", line_, col_});
            advance_to(pos_ + end.size());
            return m;
          }
        }
      }
      int l = line_, c = col_;
      char ch = rest[0];
      if (std::isalpha((unsigned char)ch) || ch == '_') {
        size_t n = 1;
        while (n < rest.size() && (std::isalnum((unsigned char)rest[n]) || rest[n] == '_')) ++n;
        tokens_.push_back({Tok::Name, std::string(rest.substr(0, n)), l, c});
        advance_to(pos_ + n);
      } else if (std::isdigit((unsigned char)ch)) {
        lex_number(rest, l, c);
      } else if (ch == '\'' || ch == '"') {
        lex_string(rest, l, c);
      } else {
        static const char* ops2[] = {"**", "//", "==", "!=", "<=", ">="};
        std::string_view op;
        for (const char* o : ops2)
          if (rest.substr(0, 2) == o) op = o;
        if (op.empty()) {
          if (std::string_view("+-*/%~<>=()[]{}.,:|").find(ch) == std::string_view::npos)
            fail(l, c, concat("unexpected character '", ch, "'"));
          op = rest.substr(0, 1);
          if (ch == '(' || ch == '[' || ch == '{') ++depth;
          if ((ch == ')' || ch == ']' || ch == '}') && depth > 0) --depth;
        }
        tokens_.push_back({Tok::Op, std::string(op), l, c});
        advance_to(pos_ + op.size());
      }
    }
  }

  void lex_number(std::string_view rest, int l, int c) {
    size_t n = 0;
    auto digits = [&] {
      while (n < rest.size() && (std::isdigit((unsigned char)rest[n]) || rest[n] == '_')) ++n;
    };
    digits();
    bool is_float = false;
    if (n + 1 < rest.size() && rest[n] == '.' && std::isdigit((unsigned char)rest[n + 1])) {
      is_float = true;
      ++n;
      digits();
    }
    if (n < rest.size() && (rest[n] == 'e' || rest[n] == 'E')) {
      size_t m = n + 1;
      if (m < rest.size() && (rest[m] == '+' || rest[m] == '-')) ++m;
      if (m < rest.size() && std::isdigit((unsigned char)rest[m])) {
        is_float = true;
        n = m;
        digits();
      }
    }
    std::string text;
    for (char ch : rest.substr(0, n))
      if (ch != '_') text += ch;
    tokens_.push_back({is_float ? Tok::Float : Tok::Int, text, l, c});
    advance_to(pos_ + n);
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  // Python string-literal escapes (Jinja2 decodes literals with unicode-escape).
  void lex_string(std::string_view rest, int l, int c) {
    char q = rest[0];
    std::string out;
    size_t i = 1;
    for (;; ++i) {
      if (i >= rest.size()) fail(l, c, "unterminated string literal");
      char ch = rest[i];
      if (ch == q) break;
      if (ch != '\\' || i + 1 >= rest.size()) {
        out += ch;
        continue;
      }
      char e = rest[++i];
      auto hex = [&](size_t count) {
        unsigned cp = 0;
        for (size_t k = 0; k < count; ++k) {
          char h = i + 1 < rest.size() ? rest[++i] : 0;
          if (!std::isxdigit((unsigned char)h)) fail(l, c, "malformed \\x/\\u escape in string");
          cp = cp * 16 + unsigned(std::isdigit((unsigned char)h) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        append_utf8(out, cp);
      };
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '0': out += '\0'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case '\n': break;
        case 'x': hex(2); break;
        case 'u': hex(4); break;
        case 'U': hex(8); break;
        default: out += '\\'; out += e;
      }
    }
    tokens_.push_back({Tok::String, std::move(out), l, c});
    advance_to(pos_ + i + 1);
  }

  std::string_view src_, name_;
  LexOptions opt_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex(std::string_view src, std::string_view name, const LexOptions& opt) {
  return Lexer(src, name, opt).run();
}

}  // namespace fk::chat::detail
