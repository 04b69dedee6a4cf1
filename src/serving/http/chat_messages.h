// The messages of a chat request, checked and put in the form the model's chat template
// takes: roles OpenAI defines, content a string, null, or a list of text parts. A part the
// text model cannot take (image_url, input_audio, ...) is refused by its type. For a
// template that does not loop over content parts, a message's parts become one string,
// their texts joined with "\n" (as vLLM does); otherwise the parts go through as a list (as
// HF's apply_chat_template passes them).
#pragma once
#include <nlohmann/json.hpp>

namespace fk::serve {

// Throws ApiError (400, param "messages") naming the message and what is wrong with it.
nlohmann::ordered_json chat_messages_for_template(const nlohmann::ordered_json& messages, bool template_takes_parts);

}  // namespace fk::serve
