// StateDict: the saved state of a stateful object (solver, optimizer, loss scaler, RNG, data
// cursor, runner counters) as an ordered map from name to tensor, integer, float or string.
// Objects save into one and load from one; checkpoints serialise them. Insertion order is kept
// so that files list entries in the order their owner wrote them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "tenax/core/tensor.hpp"

namespace tenax {

class StateDict {
 public:
  using Value = std::variant<Tensor, std::int64_t, double, std::string>;

  // Inserts or replaces `name`. Names are non-empty; '/' separates nested scopes.
  void set(std::string_view name, Value value);
  [[nodiscard]] bool contains(std::string_view name) const noexcept;
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }

  // Typed reads; throw UsageError when the name is missing or holds another kind of value,
  // naming the entry and what it holds.
  [[nodiscard]] const Tensor& tensor(std::string_view name) const;
  [[nodiscard]] std::int64_t integer(std::string_view name) const;
  [[nodiscard]] double real(std::string_view name) const;
  [[nodiscard]] const std::string& text(std::string_view name) const;
  [[nodiscard]] const Value& at(std::string_view name) const;

  // Entries of `child` inserted as "<prefix>/<name>"; the inverse is scope(prefix).
  void merge(std::string_view prefix, const StateDict& child);
  // Entries whose names start with "<prefix>/", with the prefix removed.
  [[nodiscard]] StateDict scope(std::string_view prefix) const;

  [[nodiscard]] const std::vector<std::pair<std::string, Value>>& entries() const noexcept {
    return entries_;
  }

 private:
  [[nodiscard]] const Value* find(std::string_view name) const noexcept;

  std::vector<std::pair<std::string, Value>> entries_;
};

}  // namespace tenax
