// The public face: Template::parse/render and apply_chat_template over a
// tokenizer_config.json, with the variables HF's apply_chat_template passes.
#include "text/chat_template.h"

#include "fk/status.h"
#include "text/template/lexer.h"
#include "text/template/parser.h"
#include "text/template/render.h"

namespace fk::chat {

namespace detail {
// Holds the options next to the tree so a Template is one shared, immutable object.
struct ProgramWithOptions : Program {
  TemplateOptions options;
};
}  // namespace detail

Template Template::parse(std::string_view source, std::string_view name, const TemplateOptions& options) {
  auto p = std::make_shared<detail::ProgramWithOptions>();
  p->name = std::string(name);
  p->options = options;
  if (!options.keep_trailing_newline && !source.empty() && source.back() == '\n') {
    source.remove_suffix(1);
    if (!source.empty() && source.back() == '\r') source.remove_suffix(1);
  }
  auto tokens = detail::lex(source, name, {options.trim_blocks, options.lstrip_blocks});
  p->body = detail::parse_tokens(tokens, name);
  Template t;
  t.program_ = std::move(p);
  return t;
}

const TemplateOptions& Template::options() const {
  return static_cast<const detail::ProgramWithOptions&>(*program_).options;
}

std::string Template::render(const nlohmann::ordered_json& context) const {
  FK_CHECK(program_, "render() of a template that was never parsed");
  return detail::Renderer(*program_, options(), detail::from_json(context)).run();
}

std::string Template::render(const nlohmann::json& context) const {
  FK_CHECK(program_, "render() of a template that was never parsed");
  return detail::Renderer(*program_, options(), detail::from_json(context)).run();
}

namespace {

// Special tokens are strings, or AddedToken objects {"content": ...} in older configs.
template <class Json>
Json token_text(const Json& v) {
  if (v.is_string()) return v;
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"];
  return nullptr;
}

// The source of the config's chat template (the "default" one of a named list).
template <class Json>
std::string template_source(const Json& tokenizer_config) {
  FK_CHECK(tokenizer_config.is_object(), "tokenizer_config must be a JSON object");
  FK_CHECK(tokenizer_config.contains("chat_template"), "tokenizer_config has no chat_template");
  const auto& ct = tokenizer_config["chat_template"];
  std::string source;
  if (ct.is_string()) {
    source = ct.template get<std::string>();
  } else if (ct.is_array()) {
    // Named templates (e.g. "default", "tool_use", "rag"): the plain chat uses "default".
    bool found = false;
    for (const auto& entry : ct)
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template")) {
        source = entry["template"].template get<std::string>();
        found = true;
      }
    FK_CHECK(found, "chat_template list has no template named 'default'");
  } else {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "chat_template must be a string or a list of {name, template}");
  }
  return source;
}

template <class Json>
std::string apply(const Json& tokenizer_config, const Json& messages, bool add_generation_prompt,
                  const TemplateOptions& options) {
  const std::string source = template_source(tokenizer_config);
  Json context = Json::object();
  context["messages"] = messages;
  context["add_generation_prompt"] = add_generation_prompt;
  context["tools"] = nullptr;
  context["documents"] = nullptr;
  // HF passes the tokenizer's special_tokens_map: each special token that is set, and the
  // list of additional ones.
  for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"})
    if (tokenizer_config.contains(key)) {
      auto t = token_text(tokenizer_config[key]);
      if (!t.is_null()) context[key] = t;
    }
  if (tokenizer_config.contains("additional_special_tokens") && tokenizer_config["additional_special_tokens"].is_array()) {
    Json extra = Json::array();
    for (const auto& t : tokenizer_config["additional_special_tokens"])
      if (auto text = token_text(t); !text.is_null()) extra.push_back(text);
    if (!extra.empty()) context["additional_special_tokens"] = extra;
  }
  return Template::parse(source, "chat_template", options).render(context);
}

// `e` is x.content or x['content'] for a variable x.
bool is_content_of_variable(const detail::Expr& e) {
  if (e.args.empty() || !e.args[0] || e.args[0]->kind != detail::Expr::Name) return false;
  if (e.kind == detail::Expr::Attr) return e.name == "content";
  if (e.kind != detail::Expr::Item || e.args.size() < 2 || !e.args[1] || e.args[1]->kind != detail::Expr::Literal)
    return false;
  const auto* key = std::get_if<std::string>(&e.args[1]->value.v);
  return key != nullptr && *key == "content";
}

bool body_loops_over_content(const detail::Body& body) {
  for (const detail::NodePtr& n : body) {
    if (!n) continue;
    if (n->kind == detail::Node::For && n->expr && is_content_of_variable(*n->expr)) return true;
    for (const detail::Body& b : n->bodies)
      if (body_loops_over_content(b)) return true;
  }
  return false;
}

}  // namespace

bool chat_template_takes_content_parts(const nlohmann::ordered_json& tokenizer_config) {
  const std::string source = template_source(tokenizer_config);
  const TemplateOptions options;
  auto tokens = detail::lex(source, "chat_template", {options.trim_blocks, options.lstrip_blocks});
  const detail::Body body = detail::parse_tokens(tokens, "chat_template");
  return body_loops_over_content(body);
}

std::string apply_chat_template(const nlohmann::ordered_json& tokenizer_config,
                                const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                const TemplateOptions& options) {
  return apply(tokenizer_config, messages, add_generation_prompt, options);
}

std::string apply_chat_template(const nlohmann::json& tokenizer_config,
                                const nlohmann::json& messages, bool add_generation_prompt,
                                const TemplateOptions& options) {
  return apply(tokenizer_config, messages, add_generation_prompt, options);
}

}  // namespace fk::chat
