// Behaviour the goldens cannot show: error positions and messages, the bounds that keep a
// hostile template from crashing or exhausting memory, HF-only tags, and the
// tokenizer_config handling of apply_chat_template.
#include <gtest/gtest.h>

#include <string>

#include "text/chat_template.h"
#include "fk/status.h"

namespace {

using fk::chat::Template;
using fk::chat::TemplateOptions;
using nlohmann::json;

std::string render(const std::string& src, const json& ctx = json::object(), const TemplateOptions& o = {}) {
  return Template::parse(src, "chat_template", o).render(ctx);
}

// The message of the fk::Error that f throws ("" and a test failure if none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const fk::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no fk::Error thrown";
  return "";
}

TEST(ChatTemplate, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(error_of([] { Template::parse("ab\ncd {{ 1 + }}", "t"); }).substr(0, 8), "t:2:11: ");
  EXPECT_NE(error_of([] { Template::parse("{% if x %}\n{% for y in z %}\n", "t"); }).find("'endfor'"), std::string::npos);
  EXPECT_NE(error_of([] { Template::parse("x\n  {% frob %}"); }).find("chat_template:2:6: unknown statement 'frob'"),
            std::string::npos);
  EXPECT_NE(error_of([] { Template::parse("{{ 'abc }}"); }).find("1:4: unterminated string"), std::string::npos);
  EXPECT_NE(error_of([] { Template::parse("{% break %}"); }).find("outside a loop"), std::string::npos);
  EXPECT_NE(error_of([] { Template::parse("{{ x "); }).find("expected '}}'"), std::string::npos);
  // Unknown filters and tests are found when parsing, as Jinja2 finds them when compiling.
  EXPECT_NE(error_of([] { Template::parse("\n{{ x | nosuchfilter }}"); }).find("2:8: no filter named 'nosuchfilter'"),
            std::string::npos);
  EXPECT_NE(error_of([] { Template::parse("{{ x is nosuchtest }}"); }).find("no test named 'nosuchtest'"), std::string::npos);
}

TEST(ChatTemplate, RaiseExceptionCarriesItsMessage) {
  std::string msg = error_of([] { render("line\n{{ raise_exception('Roles must alternate: ' ~ n) }}", {{"n", 3}}); });
  EXPECT_NE(msg.find("Roles must alternate: 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("chat_template:2"), std::string::npos) << msg;  // and where it was raised
}

TEST(ChatTemplate, RuntimeErrorsAreFkErrors) {
  EXPECT_NE(error_of([] { render("{{ x.y }}"); }).find("'x' is undefined"), std::string::npos);
  EXPECT_NE(error_of([] { render("{{ [1] | tojson(indent=2) ~ (none + 1) }}"); }).find("unsupported operand"), std::string::npos);
  EXPECT_NE(error_of([] { render("{{ 1 + 'a' }}"); }).find("unsupported operand"), std::string::npos);
}

TEST(ChatTemplate, HostileTemplatesAreBounded) {
  // Parser nesting: no stack overflow on deeply nested brackets or blocks.
  std::string deep = "{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}";
  EXPECT_NE(error_of([&] { Template::parse(deep); }).find("nested too deeply"), std::string::npos);
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  EXPECT_NE(error_of([&] { Template::parse(ifs); }).find("nested too deeply"), std::string::npos);
  // Unbounded recursion.
  EXPECT_NE(error_of([] { render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"); }).find("nested deeper"),
            std::string::npos);
  // Huge loops and ranges.
  TemplateOptions small;
  small.max_loop_iterations = 100000;
  EXPECT_NE(error_of([&] { render("{% for i in range(1000000000) %}{% endfor %}", {}, small); }).find("loop iterations"),
            std::string::npos);
  EXPECT_NE(error_of([&] { render("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", {}, small); })
                .find("loop iterations"),
            std::string::npos);
  // Output and string growth.
  TemplateOptions tiny;
  tiny.max_output_bytes = 1 << 20;
  EXPECT_NE(error_of([&] { render("{{ 'a' * 1000000000 }}", {}, tiny); }).find("exceeds"), std::string::npos);
  EXPECT_NE(error_of([&] {
              render("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", {}, tiny);
            }).find("exceeds"),
            std::string::npos);
  EXPECT_NE(error_of([&] { render("{% for i in range(100000) %}xxxxxxxxxxxxxxxxxxxx{% endfor %}", {}, tiny); }).find("exceeds"),
            std::string::npos);
  // Within the bounds, the same constructs work.
  EXPECT_EQ(render("{% for i in range(3) %}{{ i }}{% endfor %}", {}, small), "012");
}

TEST(ChatTemplate, GenerationTagRendersItsBody) {
  EXPECT_EQ(render("{% generation %}x{{ 1 }}{% endgeneration %}y"), "x1y");
}

TEST(ChatTemplate, WhitespaceSwitches) {
  TemplateOptions plain;
  plain.trim_blocks = false;
  plain.lstrip_blocks = false;
  const std::string src = "a\n  {% if true %}\nb\n  {% endif %}\nc";
  EXPECT_EQ(render(src), "a\nb\nc");
  EXPECT_EQ(render(src, {}, plain), "a\n  \nb\n  \nc");
  EXPECT_EQ(render("a\n  {%- if true -%}\n  b  {%- endif %}", {}, plain), "ab");
}

TEST(ChatTemplate, ApplyChatTemplatePicksDefaultAndReadsTokens) {
  json config = {
      {"chat_template", json::array({{{"name", "tool_use"}, {"template", "TOOLS"}},
                                     {{"name", "default"}, {"template", "{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}{% if add_generation_prompt %}>{% endif %}{{ tools is none }}"}}})},
      {"bos_token", {{"content", "<s>"}, {"lstrip", false}}},
      {"eos_token", "</s>"}};
  json messages = json::array({{{"role", "user"}, {"content", "hi"}}});
  EXPECT_EQ(fk::chat::apply_chat_template(config, messages, true), "<s>[user:hi]>True");
  EXPECT_EQ(fk::chat::apply_chat_template(config, messages, false), "<s>[user:hi]True");
  json extras = {{"chat_template", "{{ pad_token }}|{{ additional_special_tokens | join(',') }}|{{ unk_token is defined }}"},
                 {"pad_token", "<pad>"},
                 {"unk_token", nullptr},
                 {"additional_special_tokens", json::array({"<a>", {{"content", "<b>"}}})}};
  EXPECT_EQ(fk::chat::apply_chat_template(extras, messages, false), "<pad>|<a>,<b>|False");
  json no_default = {{"chat_template", json::array({{{"name", "rag"}, {"template", "x"}}})}};
  EXPECT_NE(error_of([&] { fk::chat::apply_chat_template(no_default, messages, false); }).find("default"), std::string::npos);
}

TEST(ChatTemplate, TemplateIsReusable) {
  Template t = Template::parse("{{ x }}!");
  EXPECT_EQ(t.render(json{{"x", 1}}), "1!");
  EXPECT_EQ(t.render(json{{"x", "two"}}), "two!");
}

}  // namespace

namespace {

// Random soups of template fragments: each must parse and render, or fail with fk::Error;
// never crash, hang or throw anything else.
TEST(ChatTemplate, RandomTemplatesFailCleanly) {
  static const char* pieces[] = {
      "{%", "%}", "{{", "}}", "{#", "#}", "-%}", "{%-", "{{-", "-}}", " if ", " elif ", " else ",
      " endif ", " for ", " in ", " endfor ", " set ", " macro ", " endmacro ", " raw ", " endraw ",
      " break ", " continue ", "x", "m", "ns", "ns.a", "=", "namespace(a=1)", "range(", "range(3)",
      "9223372036854775807", "-1", "0", "2", "1e308", "'s'", "\"\\u00e9\"", "(", ")", "[", "]", "{",
      "}", ",", ":", "::-1", ".", "|", "length", "tojson", "join", "trim", "default", "map",
      "selectattr", "items()", "keys()", "strip()", "split(", "loop.index", "loop", "is", "not",
      "defined", "none", "+", "-", "*", "**", "/", "//", "%", "~", "==", "<", "and", "or", "\n",
      " ", "text", "m()", "messages", "messages[0]", "['content']", ".content", "raise_exception('r')"};
  TemplateOptions opt;
  opt.max_output_bytes = 1 << 16;
  opt.max_loop_iterations = 10000;
  json ctx = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}, {"x", 3}};
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  auto rnd = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  int rendered = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string src;
    int n = 1 + int(rnd() % 24);
    for (int i = 0; i < n; ++i) src += pieces[rnd() % (sizeof(pieces) / sizeof(pieces[0]))];
    try {
      Template::parse(src, "fuzz", opt).render(ctx);
      ++rendered;
    } catch (const fk::Error&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "non-fk exception " << e.what() << " for: " << src;
    }
  }
  EXPECT_GT(rendered, 100);  // the soup is not all syntax errors
}

TEST(ChatTemplate, LongOperatorChainsAreBounded) {
  std::string chain = "{{ 1";
  for (int i = 0; i < 100000; ++i) chain += "+1";
  chain += " }}";
  EXPECT_NE(error_of([&] { Template::parse(chain); }).find("nested too deeply"), std::string::npos);
  std::string filters = "{{ 'a'";
  for (int i = 0; i < 100000; ++i) filters += "|trim";
  filters += " }}";
  EXPECT_NE(error_of([&] { Template::parse(filters); }).find("nested too deeply"), std::string::npos);
  std::string ok = "{{ 1";
  for (int i = 0; i < 300; ++i) ok += "+1";
  EXPECT_EQ(render(ok + " }}"), "301");
  EXPECT_NE(error_of([] { render("{{ 9223372036854775807 + 1 }}"); }).find("overflow"), std::string::npos);
  EXPECT_EQ(render("{{ ('' * 9223372036854775807) | length }} {{ [] * 9223372036854775807 }}"), "0 []");
  EXPECT_EQ(render("{{ range(-9223372036854775807, 9223372036854775807, 9223372036854775807) | list }}"),
            "[-9223372036854775807, 0]");
}

}  // namespace
