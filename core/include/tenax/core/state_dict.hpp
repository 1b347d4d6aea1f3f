/// StateDict: the saved state of a stateful object (solver, optimizer, loss scaler, RNG, data
/// cursor, runner counters) as an ordered map from name to tensor, integer, float or string.
/// Objects save into one and load from one; checkpoints serialise them. Insertion order is kept
/// so that files list entries in the order their owner wrote them. @file
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "tenax/core/tensor.hpp"

namespace tenax {

/// Named state values in insertion order. A value type: copying it copies the entries, and a
/// Tensor entry is copied as a Tensor is (a view sharing storage, not the data). Lookups are
/// linear in the number of entries. Like a standard container, it may be read from several
/// threads at once, but a write needs exclusive access.
class StateDict {
 public:
  /// One entry: a tensor, an integer, a real number or a string (index 0 to 3, in that order).
  using Value = std::variant<Tensor, std::int64_t, double, std::string>;

  /// Inserts `name` at the end or, when it exists, replaces its value in place (keeping its
  /// position). Names are non-empty (UsageError otherwise); '/' separates nested scopes.
  void set(std::string_view name, Value value);
  /// Whether an entry is called `name`.
  [[nodiscard]] bool contains(std::string_view name) const noexcept;
  /// Number of entries.
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  /// Whether there are no entries.
  [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }

  /// @name Typed reads
  ///@{

  /// The value of `name`, which must hold that kind of value; throw UsageError when the name is
  /// missing or holds another kind, naming the entry and what it holds. References stay valid
  /// until the StateDict is changed or destroyed.
  [[nodiscard]] const Tensor& tensor(std::string_view name) const;
  [[nodiscard]] std::int64_t integer(std::string_view name) const;
  [[nodiscard]] double real(std::string_view name) const;
  [[nodiscard]] const std::string& text(std::string_view name) const;
  ///@}
  /// The value of `name`, of whatever kind; UsageError when it is missing.
  [[nodiscard]] const Value& at(std::string_view name) const;

  /// Entries of `child` set (inserted or replaced) as `prefix/name`, in the child's order; the
  /// inverse is scope(prefix).
  void merge(std::string_view prefix, const StateDict& child);
  /// Entries whose names start with `prefix/`, with that removed, in order (copies of the
  /// values).
  [[nodiscard]] StateDict scope(std::string_view prefix) const;
  /// A copy whose tensors hold their own data (Tensor::clone, on their devices), so that it
  /// keeps this state while the objects it was saved from change: the backup a strict loader
  /// restores when a later part of a state is refused.
  [[nodiscard]] StateDict clone() const;

  /// Every (name, value) pair in insertion order, for serialisation and listing.
  [[nodiscard]] const std::vector<std::pair<std::string, Value>>& entries() const& noexcept {
    return entries_;
  }
  /// The entries of a temporary, moved out of it: `for (auto& e : model.state_dict().entries())`
  /// iterates over a vector that lives as long as the loop, not over a destroyed StateDict's.
  [[nodiscard]] std::vector<std::pair<std::string, Value>> entries() && noexcept {
    return std::move(entries_);
  }

 private:
  [[nodiscard]] const Value* find(std::string_view name) const noexcept;

  std::vector<std::pair<std::string, Value>> entries_;
};

}  // namespace tenax
