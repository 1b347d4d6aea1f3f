#include "tenax/core/fault_injection.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <string>

#include "tenax/core/error.hpp"
#include "tenax/core/text.hpp"

namespace tenax {
namespace {

constexpr std::string_view kKinds =
    "oom, nan, inf, device, comm, io, kill, enospc, overflow, hang, bitflip";
constexpr std::string_view kPoints = "alloc, step, checkpoint";
constexpr std::string_view kSyntax =
    "write comma-separated items kind@point=N or kind@point=NxM (N and M from 1), optionally "
    "followed by :phase and/or :rank=R (step and checkpoint points), e.g. "
    "TENAX_FAULTS=oom@alloc=37,nan@step=50x2:rank=1,kill@checkpoint=2:after_rename; kinds: oom, "
    "nan, inf, device, comm, kill, enospc, overflow, hang, bitflip; points: alloc, step, "
    "checkpoint";

[[noreturn]] void bad(std::string_view item, const std::string& what) {
  throw UsageError(
      "bad fault-injection item '" + std::string(item) + "' (--inject or TENAX_FAULTS): " + what,
      std::string(kSyntax));
}

FaultKind parse_kind(std::string_view item, std::string_view token) {
  static constexpr std::pair<std::string_view, FaultKind> kTable[] = {
      {"oom", FaultKind::oom},           {"nan", FaultKind::nan},
      {"inf", FaultKind::inf},           {"device", FaultKind::device},
      {"comm", FaultKind::comm},         {"io", FaultKind::io},
      {"kill", FaultKind::kill},         {"enospc", FaultKind::enospc},
      {"overflow", FaultKind::overflow}, {"hang", FaultKind::hang},
      {"bitflip", FaultKind::bitflip}};
  for (const auto& [name, kind] : kTable) {
    if (token == name) return kind;
  }
  bad(item,
      "unknown fault kind '" + std::string(token) + "' (valid kinds: " + std::string(kKinds) + ")");
}

FaultPoint parse_point(std::string_view item, std::string_view token) {
  if (token == "alloc") return FaultPoint::alloc;
  if (token == "step") return FaultPoint::step;
  if (token == "checkpoint") return FaultPoint::checkpoint;
  bad(item, "unknown injection point '" + std::string(token) +
                "' (valid points: " + std::string(kPoints) + ")");
}

std::uint64_t parse_count(std::string_view item, std::string_view token, const char* what) {
  const std::optional<std::uint64_t> value = parse_whole<std::uint64_t>(token);
  if (!value || *value == 0) {
    bad(item, std::string(what) + " '" + std::string(token) + "' is not a whole number from 1");
  }
  return *value;
}

// Where each kind is injected (the FaultKind table): an item at another point would be accepted
// and never fire, and the run would end with "no faults", as if it had survived one.
void check_injected_there(std::string_view item, const FaultSpec& spec) {
  const auto at = [&](std::initializer_list<FaultPoint> points) {
    return std::find(points.begin(), points.end(), spec.point) != points.end();
  };
  std::string where;
  switch (spec.kind) {
    case FaultKind::oom:
      if (at({FaultPoint::alloc, FaultPoint::step})) return;
      where = "alloc or step";
      break;
    case FaultKind::kill:
      if (at({FaultPoint::step, FaultPoint::checkpoint})) return;
      where = "step or checkpoint";
      break;
    case FaultKind::enospc:
      if (at({FaultPoint::checkpoint})) return;
      where = "checkpoint";
      break;
    case FaultKind::io:
      bad(item, "nothing in tenax injects 'io' faults (use enospc@checkpoint for a failed write)");
    default:  // nan, inf, device, comm, overflow, hang, bitflip
      if (at({FaultPoint::step})) return;
      where = "step";
      break;
  }
  bad(item, "'" + std::string(to_string(spec.kind)) + "' is injected at " + where + ", not at '" +
                std::string(to_string(spec.point)) + "': the item would never fire");
}

FaultSpec parse_item(std::string_view item) {
  const std::size_t at = item.find('@');
  const std::size_t eq = item.find('=');
  if (at == std::string_view::npos || eq == std::string_view::npos || eq < at) {
    bad(item, "expected kind@point=N");
  }
  FaultSpec spec;
  spec.kind = parse_kind(item, trim(item.substr(0, at)));
  spec.point = parse_point(item, trim(item.substr(at + 1, eq - at - 1)));
  std::string_view number = trim(item.substr(eq + 1));
  const std::size_t colon = number.find(':');
  if (colon != std::string_view::npos) {
    std::string_view qualifiers = number.substr(colon + 1);
    number = trim(number.substr(0, colon));
    while (true) {
      const std::size_t next = qualifiers.find(':');
      const std::string_view qualifier = trim(qualifiers.substr(0, next));
      if (qualifier.starts_with("rank=")) {
        if (spec.rank >= 0) bad(item, "the rank is given twice");
        if (spec.point == FaultPoint::alloc) {
          bad(item,
              "a rank applies to step and checkpoint points only (allocation faults count the "
              "allocations of the whole process; set TENAX_FAULTS on that rank alone instead)");
        }
        const std::string_view value = qualifier.substr(5);
        const std::optional<int> rank = parse_whole<int>(value);
        if (!rank || *rank < 0 || *rank > (1 << 20)) {
          bad(item, "rank '" + std::string(value) + "' is not a whole number from 0 to 1048576");
        }
        spec.rank = *rank;
      } else {
        const bool valid =
            !qualifier.empty() && std::all_of(qualifier.begin(), qualifier.end(), [](char c) {
              return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
            });
        if (!valid) {
          bad(item, "phase '" + std::string(qualifier) +
                        "' is not a name of lower-case letters, digits and underscores (nor "
                        "rank=R)");
        }
        if (!spec.phase.empty()) bad(item, "the phase is given twice");
        spec.phase = std::string(qualifier);
      }
      if (next == std::string_view::npos) break;
      qualifiers.remove_prefix(next + 1);
    }
  }
  const std::size_t x = number.find_first_of("xX");
  if (x != std::string_view::npos) {
    spec.count = parse_count(item, number.substr(x + 1), "repeat count");
    number = number.substr(0, x);
  }
  spec.first = parse_count(item, number, "occurrence");
  check_injected_there(item, spec);
  return spec;
}

}  // namespace

std::string_view to_string(FaultKind kind) noexcept {
  switch (kind) {
    case FaultKind::oom:
      return "oom";
    case FaultKind::nan:
      return "nan";
    case FaultKind::inf:
      return "inf";
    case FaultKind::device:
      return "device";
    case FaultKind::comm:
      return "comm";
    case FaultKind::io:
      return "io";
    case FaultKind::kill:
      return "kill";
    case FaultKind::enospc:
      return "enospc";
    case FaultKind::overflow:
      return "overflow";
    case FaultKind::hang:
      return "hang";
    case FaultKind::bitflip:
      return "bitflip";
  }
  return "unknown";
}

std::string_view to_string(FaultPoint point) noexcept {
  switch (point) {
    case FaultPoint::alloc:
      return "alloc";
    case FaultPoint::step:
      return "step";
    case FaultPoint::checkpoint:
      return "checkpoint";
  }
  return "unknown";
}

FaultPlan::FaultPlan(std::vector<FaultSpec> faults) : faults_(std::move(faults)) {}

FaultPlan::FaultPlan(const FaultPlan& other) : faults_(other.faults_) {
  for (std::size_t i = 0; i < counters_.size(); ++i) counters_[i] = other.counters_[i].load();
}

FaultPlan& FaultPlan::operator=(const FaultPlan& other) {
  if (this != &other) {
    faults_ = other.faults_;
    for (std::size_t i = 0; i < counters_.size(); ++i) counters_[i] = other.counters_[i].load();
  }
  return *this;
}

FaultPlan FaultPlan::parse(std::string_view text) {
  std::vector<FaultSpec> faults;
  const std::string_view whole = text;
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    if (!item.empty()) {
      faults.push_back(parse_item(item));
    } else if (comma != std::string_view::npos) {
      bad(whole, "empty item between commas");
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return FaultPlan(std::move(faults));
}

FaultPlan FaultPlan::from_environment() {
  const char* value = std::getenv("TENAX_FAULTS");
  return value == nullptr ? FaultPlan() : parse(value);
}

bool FaultPlan::has(FaultPoint point) const noexcept {
  for (const FaultSpec& f : faults_) {
    if (f.point == point) return true;
  }
  return false;
}

bool FaultPlan::should_fire(FaultKind kind, FaultPoint point,
                            std::uint64_t counter) const noexcept {
  for (const FaultSpec& f : faults_) {
    if (f.kind == kind && f.point == point && counter >= f.first && counter - f.first < f.count) {
      return true;
    }
  }
  return false;
}

bool FaultPlan::should_fire(FaultKind kind, FaultPoint point, std::uint64_t counter,
                            std::string_view phase) const noexcept {
  for (const FaultSpec& f : faults_) {
    if (f.kind == kind && f.point == point && counter >= f.first && counter - f.first < f.count &&
        (f.phase.empty() || f.phase == phase)) {
      return true;
    }
  }
  return false;
}

std::uint64_t FaultPlan::advance(FaultPoint point) noexcept {
  return counters_[static_cast<std::size_t>(point)].fetch_add(1) + 1;
}

std::uint64_t FaultPlan::count(FaultPoint point) const noexcept {
  return counters_[static_cast<std::size_t>(point)].load();
}

std::string FaultPlan::to_string() const {
  std::string out;
  for (const FaultSpec& f : faults_) {
    if (!out.empty()) out += ',';
    out += tenax::to_string(f.kind);
    out += '@';
    out += tenax::to_string(f.point);
    out += '=';
    out += std::to_string(f.first);
    if (f.count != 1) out += 'x' + std::to_string(f.count);
    if (!f.phase.empty()) out += ':' + f.phase;
    if (f.rank >= 0) out += ":rank=" + std::to_string(f.rank);
  }
  return out;
}

FaultPlan FaultPlan::for_rank(int rank) const {
  std::vector<FaultSpec> kept;
  for (const FaultSpec& f : faults_) {
    if (f.rank < 0 || f.rank == rank) kept.push_back(f);
  }
  return FaultPlan(std::move(kept));
}

FaultPlan& process_fault_plan() {
  static FaultPlan plan = FaultPlan::from_environment();
  return plan;
}

}  // namespace tenax
