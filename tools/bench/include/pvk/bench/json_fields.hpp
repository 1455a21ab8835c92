// Reading a declarative JSON file field by field (bench/experiments.json,
// cost profiles): each accessor checks the field's type, and every error is
// one line naming the file and the field ("bench/experiments.json:
// targets[3].at_most: expected a number"). Keys nobody asked for are
// refused too (a misspelt key would otherwise be ignored), except comment.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace pvk::bench {

using JsonValue = nlohmann::ordered_json;

// Thrown for a bad file; what() is the one line.
class JsonFieldError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class JsonFields {
 public:
  // `path` names the object in errors ("targets[3]"; "" the file's top).
  JsonFields(const JsonValue& object, std::string file, std::string path);

  std::string str(std::string_view key, std::optional<std::string> fallback = std::nullopt);
  double number(std::string_view key, std::optional<double> fallback = std::nullopt);
  bool boolean(std::string_view key, std::optional<bool> fallback = std::nullopt);
  std::vector<std::string> strings(std::string_view key, std::optional<std::vector<std::string>> fallback = std::nullopt);
  std::vector<double> numbers(std::string_view key);
  // The member itself (an object or array the caller reads on), required.
  const JsonValue& member(std::string_view key, bool is_array);
  // Each element of an array member, as fields of its own ("targets[3]").
  std::vector<JsonFields> objects(std::string_view key);

  // The path of a field, for errors the caller raises itself.
  std::string where(std::string_view key) const;
  [[noreturn]] void fail(std::string_view key, std::string_view what) const;
  // Refuses keys no accessor read.
  void done() const;

 private:
  const JsonValue* find(std::string_view key, bool required);

  const JsonValue& object_;
  std::string file_, path_;
  std::set<std::string, std::less<>> read_;
};

}  // namespace pvk::bench
