// JSON parsing for untrusted files (safetensors headers, shard indexes, config.json).
// A plain nlohmann::json::parse silently keeps the last of two equal keys and nests as
// deep as the input asks; here both are errors, and every failure is an fk::Error that
// starts with `source`.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace fk::safetensors {

inline constexpr int kMaxJsonDepth = 64;

// Parses `text` as one JSON value (surrounding whitespace allowed). Rejects duplicate keys
// in any object and nesting deeper than kMaxJsonDepth. `what` says what the text is
// ("header", "index") for messages: "<source>: header is not valid JSON: ...".
nlohmann::json parse_strict_json(std::string_view text, std::string_view source, std::string_view what);

// `text` made safe to print in an error message: control bytes, and with escape_non_ascii
// every byte >= 0x80 (text that may not be UTF-8), become \xNN.
std::string printable(std::string_view text, bool escape_non_ascii = false);

// "string", "number", "object", ... for messages about wrong types.
const char* json_type_name(const nlohmann::json& j);

}  // namespace fk::safetensors
