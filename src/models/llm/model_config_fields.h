// Typed access to config.json fields with a family's defaults behind them. A field is
// looked up in the config, then in the defaults; JSON null is kept as "explicitly none"
// (HF configs use it for "no sliding window", "head_dim derived", ...). Every error names
// the source and the field.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fk::model_config_detail {

class ConfigFields {
 public:
  ConfigFields(const nlohmann::json& config, const nlohmann::json& defaults, std::string source,
               std::string family)
      : config_(config), defaults_(defaults), source_(std::move(source)), family_(std::move(family)) {}
  // Holds references: temporaries would dangle.
  ConfigFields(const nlohmann::json&&, const nlohmann::json&, std::string, std::string) = delete;
  ConfigFields(const nlohmann::json&, const nlohmann::json&&, std::string, std::string) = delete;

  // The value (config first, then defaults), or nullptr when neither has the key.
  const nlohmann::json* find(std::string_view key) const;
  bool in_config(std::string_view key) const { return config_.contains(key); }

  // Required: absent or null is an error.
  int64_t integer(std::string_view key) const;
  double number(std::string_view key) const;
  bool boolean(std::string_view key) const;
  std::string string(std::string_view key) const;
  // Absent or null gives nullopt.
  std::optional<int64_t> optional_integer(std::string_view key) const;
  std::optional<double> optional_number(std::string_view key) const;
  std::optional<std::string> optional_string(std::string_view key) const;
  // An integer, or a list of integers (eos_token_id); absent or null gives an empty list.
  std::vector<int64_t> integer_list(std::string_view key) const;

  // Checks applied to values already read; `key` names the field.
  void require_positive(std::string_view key, int64_t value) const;
  void require_positive(std::string_view key, double value) const;

  [[noreturn]] void fail(const std::string& message) const;
  const std::string& source() const { return source_; }

 private:
  const nlohmann::json& required(std::string_view key) const;
  int64_t as_integer(std::string_view key, const nlohmann::json& v) const;
  double as_number(std::string_view key, const nlohmann::json& v) const;
  [[noreturn]] void wrong_type(std::string_view key, const char* expected, const nlohmann::json& v) const;

  const nlohmann::json& config_;
  const nlohmann::json& defaults_;
  std::string source_;
  std::string family_;
};

}  // namespace fk::model_config_detail
