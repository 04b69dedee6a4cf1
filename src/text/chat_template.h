// Chat templates: a Jinja2 subset that renders the `chat_template` of a Hugging Face
// tokenizer_config.json in C++, so the engine turns a conversation into a prompt with no
// Python at run time. The subset is what real chat templates use (Llama, Qwen, Mistral,
// Gemma...); anything else is a parse or render error that names the place.
//
// Statements: if/elif/else, for (with else, `if` filter, tuple targets, loop.*), break and
// continue, set (names, tuples, ns.attr, blocks), macro, call blocks with caller(), filter
// blocks, raw, comments, HF's generation tag; whitespace control with -/+ markers,
// trim_blocks, lstrip_blocks. Values follow Python (str(), repr, ints vs floats, slicing).
// Not supported: template inheritance and includes, recursive for loops, str % formatting,
// mutating methods (list.append: HF's sandbox refuses them too).
#pragma once
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace fk::chat {

namespace detail {
struct Program;
}

struct TemplateOptions {
  // Hugging Face renders with trim_blocks=True and lstrip_blocks=True; so do we by default.
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  // Jinja2's default: one newline at the very end of the source is dropped.
  bool keep_trailing_newline = false;
  // Bounds against hostile templates: rendering stops with an fk::Error past these.
  std::size_t max_output_bytes = 64u << 20;  // also caps every string built on the way
  int max_call_depth = 200;                  // nested macro calls
  std::size_t max_loop_iterations = 10'000'000;  // all loops of one render together
  // strftime_now() reads this clock (local time); tests inject a fixed instant.
  std::function<std::chrono::system_clock::time_point()> clock;
};

class Template {
 public:
  // Throws fk::Error naming "<name>:<line>:<column>" on a syntax error.
  static Template parse(std::string_view source, std::string_view name = "chat_template",
                        const TemplateOptions& options = {});
  // Renders with the context's top-level keys as variables. Throws fk::Error for
  // raise_exception (carrying its message) and for runtime errors.
  // Prefer ordered_json: nlohmann::json sorts object keys, so `tojson` and `.items()`
  // would list them sorted where Python lists them in the order given.
  std::string render(const nlohmann::ordered_json& context) const;
  std::string render(const nlohmann::json& context) const;

  const TemplateOptions& options() const;

 private:
  std::shared_ptr<const detail::Program> program_;
};

// The chat template of a tokenizer_config.json ("chat_template" as a string, or a list of
// {name, template} where "default" is picked), rendered with messages,
// add_generation_prompt, the special tokens of the config (bos_token, eos_token, unk_token,
// pad_token..., additional_special_tokens; plain strings or {"content": ...}) and
// tools=None, documents=None, as HF's apply_chat_template renders it.
std::string apply_chat_template(const nlohmann::ordered_json& tokenizer_config,
                                const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                const TemplateOptions& options = {});
std::string apply_chat_template(const nlohmann::json& tokenizer_config,
                                const nlohmann::json& messages, bool add_generation_prompt,
                                const TemplateOptions& options = {});

// Whether the config's chat template loops over a message's content (`{% for part in
// message['content'] %}`): such a template takes OpenAI content parts as a list, as HF
// passes them; any other renders a list as its Python repr, so a server joins the parts'
// text into one string first. The test is vLLM's (its "openai" vs "string" content format).
bool chat_template_takes_content_parts(const nlohmann::ordered_json& tokenizer_config);

}  // namespace fk::chat
