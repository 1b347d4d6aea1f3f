#include "tenax/core/state_dict.hpp"

#include <algorithm>

namespace tenax {
namespace {

std::string_view kind_of(const StateDict::Value& value) {
  switch (value.index()) {
    case 0:
      return "a tensor";
    case 1:
      return "an integer";
    case 2:
      return "a real number";
    default:
      return "a string";
  }
}

template <class T>
const T& get_as(const StateDict& dict, std::string_view name, std::string_view wanted) {
  const StateDict::Value& value = dict.at(name);
  const T* typed = std::get_if<T>(&value);
  TENAX_EXPECTS(typed != nullptr, UsageError,
                "state entry '" + std::string(name) + "' holds " + std::string(kind_of(value)) +
                    ", not " + std::string(wanted),
                "read it with the accessor of its kind, or check that the state was saved by "
                "the same version of the object that loads it");
  return *typed;
}

}  // namespace

void StateDict::set(std::string_view name, Value value) {
  TENAX_EXPECTS(!name.empty(), UsageError, "a state entry was given an empty name",
                "name every entry, using '/' to separate scopes");
  for (auto& [key, existing] : entries_) {
    if (key == name) {
      existing = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::string(name), std::move(value));
}

const StateDict::Value* StateDict::find(std::string_view name) const noexcept {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const auto& entry) { return entry.first == name; });
  return it == entries_.end() ? nullptr : &it->second;
}

bool StateDict::contains(std::string_view name) const noexcept { return find(name) != nullptr; }

const StateDict::Value& StateDict::at(std::string_view name) const {
  const Value* value = find(name);
  TENAX_EXPECTS(value != nullptr, UsageError,
                "state entry '" + std::string(name) + "' is missing (the state has " +
                    std::to_string(entries_.size()) + " entries)",
                "check the name, or that the state was saved by the object that loads it");
  return *value;
}

const Tensor& StateDict::tensor(std::string_view name) const {
  return get_as<Tensor>(*this, name, "a tensor");
}
std::int64_t StateDict::integer(std::string_view name) const {
  return get_as<std::int64_t>(*this, name, "an integer");
}
double StateDict::real(std::string_view name) const {
  return get_as<double>(*this, name, "a real number");
}
const std::string& StateDict::text(std::string_view name) const {
  return get_as<std::string>(*this, name, "a string");
}

void StateDict::merge(std::string_view prefix, const StateDict& child) {
  for (const auto& [key, value] : child.entries_) {
    set(std::string(prefix) + "/" + key, value);
  }
}

StateDict StateDict::scope(std::string_view prefix) const {
  StateDict result;
  const std::string head = std::string(prefix) + "/";
  for (const auto& [key, value] : entries_) {
    if (key.starts_with(head)) result.set(std::string_view(key).substr(head.size()), value);
  }
  return result;
}

StateDict StateDict::clone() const {
  StateDict result;
  result.entries_.reserve(entries_.size());
  for (const auto& [key, value] : entries_) {
    const Tensor* tensor = std::get_if<Tensor>(&value);
    result.entries_.emplace_back(key, tensor != nullptr ? Value(tensor->clone()) : value);
  }
  return result;
}

}  // namespace tenax
