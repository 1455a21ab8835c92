#include "pvk/bench/json_fields.hpp"

#include <fmt/format.h>

namespace pvk::bench {

JsonFields::JsonFields(const JsonValue& object, std::string file, std::string path)
    : object_(object), file_(std::move(file)), path_(std::move(path)) {
  if (!object_.is_object())
    throw JsonFieldError(fmt::format("{}: {}: expected an object", file_, path_.empty() ? "the file" : path_));
}

std::string JsonFields::where(std::string_view key) const {
  return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
}

void JsonFields::fail(std::string_view key, std::string_view what) const {
  throw JsonFieldError(fmt::format("{}: {}: {}", file_, where(key), what));
}

const JsonValue* JsonFields::find(std::string_view key, bool required) {
  read_.emplace(key);
  const auto it = object_.find(std::string(key));
  if (it == object_.end() || it->is_null()) {
    if (required) fail(key, "missing");
    return nullptr;
  }
  return &*it;
}

std::string JsonFields::str(std::string_view key, std::optional<std::string> fallback) {
  const JsonValue* v = find(key, !fallback);
  if (!v) return *fallback;
  if (!v->is_string()) fail(key, "expected a string");
  return v->get<std::string>();
}

double JsonFields::number(std::string_view key, std::optional<double> fallback) {
  const JsonValue* v = find(key, !fallback);
  if (!v) return *fallback;
  if (!v->is_number()) fail(key, "expected a number");
  return v->get<double>();
}

bool JsonFields::boolean(std::string_view key, std::optional<bool> fallback) {
  const JsonValue* v = find(key, !fallback);
  if (!v) return *fallback;
  if (!v->is_boolean()) fail(key, "expected true or false");
  return v->get<bool>();
}

std::vector<std::string> JsonFields::strings(std::string_view key, std::optional<std::vector<std::string>> fallback) {
  const JsonValue* v = find(key, !fallback);
  if (!v) return *fallback;
  if (!v->is_array()) fail(key, "expected an array of strings");
  std::vector<std::string> out;
  for (const auto& e : *v) {
    if (!e.is_string()) fail(key, "expected an array of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::vector<double> JsonFields::numbers(std::string_view key) {
  const JsonValue* v = find(key, true);
  if (!v->is_array()) fail(key, "expected an array of numbers");
  std::vector<double> out;
  for (const auto& e : *v) {
    if (!e.is_number()) fail(key, "expected an array of numbers");
    out.push_back(e.get<double>());
  }
  return out;
}

const JsonValue& JsonFields::member(std::string_view key, bool is_array) {
  const JsonValue* v = find(key, true);
  if (is_array ? !v->is_array() : !v->is_object()) fail(key, is_array ? "expected an array" : "expected an object");
  return *v;
}

std::vector<JsonFields> JsonFields::objects(std::string_view key) {
  const JsonValue& array = member(key, true);
  std::vector<JsonFields> out;
  for (size_t i = 0; i < array.size(); ++i) out.emplace_back(array[i], file_, fmt::format("{}[{}]", where(key), i));
  return out;
}

void JsonFields::done() const {
  for (const auto& [key, value] : object_.items())
    if (key != "comment" && !read_.count(key)) fail(key, "unknown field");
}

}  // namespace pvk::bench
