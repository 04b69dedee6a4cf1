// Every golden of tests/data/chat_templates/ (written by make_goldens.py with Jinja2 set up
// as Hugging Face sets it up) must render to exactly Jinja2's text, or fail where Jinja2
// fails; raise_exception failures must carry Jinja2's message.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>

#include "text/chat_template.h"
#include "fk/status.h"

namespace {

using nlohmann::json;

std::ifstream open_data(const std::string& file) {
  std::ifstream in(std::string(FK_SOURCE_DIR) + "/tests/data/chat_templates/" + file);
  EXPECT_TRUE(in.good()) << file;
  return in;
}

nlohmann::ordered_json load(const std::string& file) { return nlohmann::ordered_json::parse(open_data(file)); }

std::string family_template(const std::string& family) {
  std::ifstream in = open_data(family + ".jinja");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The instant make_goldens.py gives strftime_now: 2024-07-26 12:30:45, read as UTC.
fk::chat::TemplateOptions fixed_clock_options() {
  setenv("TZ", "UTC", 1);
  tzset();
  fk::chat::TemplateOptions o;
  o.clock = [] { return std::chrono::system_clock::from_time_t(1721997045); };
  return o;
}

void check_case(const nlohmann::ordered_json& c, const std::function<std::string()>& render) {
  SCOPED_TRACE(c["name"].get<std::string>());
  if (c.contains("expected")) {
    std::string got;
    try {
      got = render();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw: " << e.what();
      return;
    }
    EXPECT_EQ(got, c["expected"].get<std::string>());
    return;
  }
  try {
    std::string got = render();
    ADD_FAILURE() << "expected an error like \"" << c["error"].get<std::string>() << "\", rendered: " << got;
  } catch (const fk::Error& e) {
    if (c.value("error_kind", "") == "TemplateError")  // raise_exception: its message reaches the caller
      EXPECT_NE(std::string(e.what()).find(c["error"].get<std::string>()), std::string::npos) << e.what();
    if (c.value("error_kind", "") == "syntax") {
      std::string where = "chat_template:" + std::to_string(c["error_line"].get<int>()) + ":";
      EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
    }
  }
}

TEST(ChatTemplateGoldens, FamiliesMatchJinja2) {
  nlohmann::ordered_json goldens = load("family_goldens.json");
  ASSERT_GE(goldens.size(), 80u);
  auto opt = fixed_clock_options();
  for (const auto& c : goldens) {
    std::string source = family_template(c["family"].get<std::string>());
    check_case(c, [&] {
      // Cases with their own variables (tools, enable_thinking...) render the template
      // directly; the others go through apply_chat_template.
      if (c.contains("context"))
        return fk::chat::Template::parse(source, "chat_template", opt).render(c["context"]);
      nlohmann::ordered_json config = c["tokenizer_config"];
      config["chat_template"] = source;
      return fk::chat::apply_chat_template(config, c["messages"], c["add_generation_prompt"].get<bool>(), opt);
    });
  }
}

void check_template_cases(const nlohmann::ordered_json& goldens) {
  auto base = fixed_clock_options();
  for (const auto& c : goldens) {
    auto opt = base;
    if (c.contains("options")) {
      opt.trim_blocks = c["options"].value("trim_blocks", true);
      opt.lstrip_blocks = c["options"].value("lstrip_blocks", true);
    }
    check_case(c, [&] {
      return fk::chat::Template::parse(c["template"].get<std::string>(), "chat_template", opt)
          .render(c["context"]);
    });
  }
}

TEST(ChatTemplateGoldens, ExpressionsMatchJinja2) {
  nlohmann::ordered_json goldens = load("expression_goldens.json");
  ASSERT_GE(goldens.size(), 60u);
  check_template_cases(goldens);
}

// Random expressions and statement soups (fixed seed) rendered by Jinja2.
TEST(ChatTemplateGoldens, RandomCasesMatchJinja2) {
  nlohmann::ordered_json goldens = load("random_goldens.json");
  ASSERT_GE(goldens.size(), 500u);
  check_template_cases(goldens);
}

}  // namespace
