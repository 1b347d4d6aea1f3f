// `tenax ckpt show`: the metadata and entries of one state file, with values of small entries,
// statistics of large ones, and every value of one entry on request.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <span>
#include <string_view>
#include <vector>

#include "ckpt_command.hpp"
#include "tenax/core/error.hpp"
#include "tenax/core/half.hpp"
#include "tenax/core/state_dict.hpp"
#include "tenax/io/checkpoint_layout.hpp"
#include "tenax/io/checkpoint_store.hpp"
#include "tenax/io/checksum.hpp"
#include "tenax/io/runner_entries.hpp"
#include "tenax/io/shard_layout.hpp"
#include "tenax/io/state_file.hpp"

namespace tenax::tools {
namespace {

constexpr std::int64_t kInlineValues = 8;  // tensors this small are printed in full
constexpr std::size_t kInlineString = 60;  // bytes of a string printed in the entry table

// What is shown, and where it came from.
struct Shown {
  std::filesystem::path file;
  io::FileMetadata metadata;
  StateDict state;
  std::string origin;  // how a directory was resolved to this file ("" for a file)
  std::vector<io::SkippedCheckpoint> skipped;
};

StateDict read_checked(const std::filesystem::path& file, io::FileMetadata& metadata) {
  if (!has_hdf5_signature(file)) {
    throw IoError("'" + file.string() +
                      "' is not a tenax state file: it does not start with the HDF5 signature "
                      "(or its first bytes are corrupt)",
                  "pass a rank-<r>.h5 file of a checkpoint, a checkpoints/step-<N> directory or "
                  "the run directory; `tenax ckpt verify PATH` says what is wrong with a file");
  }
  return io::read_state_file(file, &metadata);
}

Shown load(const CheckpointPath& where, int rank) {
  Shown shown;
  switch (where.kind) {
    case CheckpointPath::Kind::run_dir: {
      io::LoadedCheckpoint loaded = io::CheckpointStore(where.run_dir).load_latest(rank);
      if (!loaded.found) {
        std::string why;
        for (const auto& s : loaded.skipped) {
          why += fmt::format("; step {}: {}", s.step, s.reason);
        }
        throw IoError(fmt::format("'{}' has no valid checkpoint for rank {}{}",
                                  where.run_dir.string(), rank, why),
                      "`tenax ckpt list RUN_DIR` shows every checkpoint directory and why it is "
                      "invalid; show a file directly with `tenax ckpt show FILE.h5`");
      }
      shown.file = loaded.file;
      shown.metadata = std::move(loaded.metadata);
      shown.state = std::move(loaded.state);
      shown.skipped = std::move(loaded.skipped);
      shown.origin = fmt::format("newest valid checkpoint of {} (step {})", where.run_dir.string(),
                                 loaded.step);
      return shown;
    }
    case CheckpointPath::Kind::step_dir: {
      shown.file = where.path / io::rank_file_name(rank);
      std::error_code ec;
      if (!std::filesystem::is_regular_file(shown.file, ec)) {
        throw UsageError("'" + where.path.string() + "' has no " + io::rank_file_name(rank),
                         "pick a rank that wrote this checkpoint with --rank, or pass the file");
      }
      const auto problem =
          io::CheckpointStore(where.run_dir).verify(*where.step, rank, /*deep=*/false);
      shown.origin = problem ? "checkpoint step " + std::to_string(*where.step) +
                                   ", which is INVALID: " + *problem
                             : "checkpoint step " + std::to_string(*where.step) +
                                   " (commit record and digest verified)";
      break;
    }
    case CheckpointPath::Kind::file:
      shown.file = where.path;
      break;
  }
  shown.state = read_checked(shown.file, shown.metadata);
  return shown;
}

// Calls f(pointer) with the tensor's elements typed by its dtype.
template <class F>
decltype(auto) with_elements(const Tensor& t, F&& f) {
  switch (t.dtype()) {
    case DType::f64:
      return f(t.data_as<const double>());
    case DType::f32:
      return f(t.data_as<const float>());
    case DType::f16:
      return f(t.data_as<const Half>());
    case DType::bf16:
      return f(t.data_as<const BFloat16>());
    case DType::i64:
      return f(t.data_as<const std::int64_t>());
    case DType::i32:
      return f(t.data_as<const std::int32_t>());
    case DType::u8:
      return f(t.data_as<const std::uint8_t>());
  }
  return f(t.data_as<const std::uint8_t>());
}

double as_double(Half v) { return to_float(v); }
double as_double(BFloat16 v) { return to_float(v); }
template <class T>
double as_double(T v) {
  return static_cast<double>(v);
}

// One element as text (integers exact, floats shortest round-trip) and as JSON.
std::string element_text(const Tensor& t, std::int64_t i) {
  return with_elements(t, [i](const auto* data) {
    const auto v = data[i];
    if constexpr (std::is_integral_v<std::remove_cvref_t<decltype(v)>>) {
      return fmt::format("{}", +v);
    } else {
      return fmt::format("{}", as_double(v));
    }
  });
}
nlohmann::json element_json(const Tensor& t, std::int64_t i) {
  return with_elements(t, [i](const auto* data) {
    const auto v = data[i];
    if constexpr (std::is_integral_v<std::remove_cvref_t<decltype(v)>>) {
      return nlohmann::json(+v);
    } else {
      return nlohmann::json(as_double(v));  // NaN and infinities become null
    }
  });
}

struct Stats {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double mean = 0;  // of the finite values
  std::int64_t non_finite = 0;
};

Stats stats_of(const Tensor& t) {
  Stats s;
  double sum = 0;
  std::int64_t finite = 0;
  with_elements(t, [&](const auto* data) {
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      const double v = as_double(data[i]);
      if (!std::isfinite(v)) {
        ++s.non_finite;
        continue;
      }
      s.min = std::min(s.min, v);
      s.max = std::max(s.max, v);
      sum += v;
      ++finite;
    }
  });
  s.mean = finite > 0 ? sum / static_cast<double>(finite) : std::nan("");
  return s;
}

// "[j, i]" of the flat index of an element.
std::string multi_index(const Shape& shape, std::int64_t flat) {
  std::vector<std::int64_t> index(static_cast<std::size_t>(shape.rank()));
  for (int axis = shape.rank() - 1; axis >= 0; --axis) {
    const std::int64_t extent = std::max<std::int64_t>(shape[axis], 1);
    index[static_cast<std::size_t>(axis)] = flat % extent;
    flat /= extent;
  }
  return fmt::format("[{}]", fmt::join(index, ", "));
}

// Printable form of a string value: escapes control bytes, cuts it at `limit` bytes.
std::string quoted(const std::string& text, std::size_t limit) {
  std::string out = "\"";
  for (std::size_t i = 0; i < std::min(text.size(), limit); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
  if (text.size() > limit) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

// The table columns of one entry; the checksum is recomputed from the values as the writer
// computes it (read_state_file has verified that it matches the stored one).
struct EntryInfo {
  std::string kind, dtype, shape, summary;
  std::uint64_t bytes = 0;
  std::uint64_t checksum = 0;
  nlohmann::json json;
};

EntryInfo describe(const std::string& name, const StateDict::Value& value) {
  EntryInfo e;
  e.json = {{"name", name}};
  if (const auto* t = std::get_if<Tensor>(&value)) {
    e.kind = "tensor";
    e.dtype = std::string(to_string(t->dtype()));
    e.shape = to_string(t->shape());
    e.bytes = t->nbytes();
    e.checksum = io::xxh64(t->data(), t->nbytes());
    e.json["shape"] =
        std::vector<std::int64_t>(t->shape().extents().begin(), t->shape().extents().end());
    if (t->numel() <= kInlineValues) {
      std::vector<std::string> values;
      nlohmann::json json_values = nlohmann::json::array();
      for (std::int64_t i = 0; i < t->numel(); ++i) {
        values.push_back(element_text(*t, i));
        json_values.push_back(element_json(*t, i));
      }
      e.summary = t->shape().rank() == 0 ? "value " + values.front()
                                         : fmt::format("values [{}]", fmt::join(values, ", "));
      e.json[t->shape().rank() == 0 ? "value" : "values"] =
          t->shape().rank() == 0 ? json_values.front() : json_values;
    } else {
      const Stats s = stats_of(*t);
      e.summary = fmt::format("min {:.6g} max {:.6g} mean {:.6g}", s.min, s.max, s.mean);
      e.json["stats"] = {{"min", s.min}, {"max", s.max}, {"mean", s.mean}};
      if (is_floating(t->dtype())) {
        e.summary += fmt::format(" non-finite {}", s.non_finite);
        e.json["stats"]["non_finite"] = s.non_finite;
      }
    }
  } else if (const auto* integer = std::get_if<std::int64_t>(&value)) {
    e.kind = "integer";
    e.dtype = "i64";
    e.bytes = 8;
    e.checksum = io::xxh64(integer, 8);
    e.summary = fmt::format("value {}", *integer);
    e.json["value"] = *integer;
  } else if (const auto* real = std::get_if<double>(&value)) {
    e.kind = "real";
    e.dtype = "f64";
    e.bytes = 8;
    e.checksum = io::xxh64(real, 8);
    e.summary = fmt::format("value {}", *real);
    e.json["value"] = *real;
  } else {
    const auto& text = std::get<std::string>(value);
    e.kind = "string";
    e.dtype = "-";
    e.bytes = text.size();
    e.checksum = io::xxh64(text.data(), text.size());
    e.summary = "value " + quoted(text, kInlineString);
    e.json["value"] = text;
  }
  if (e.shape.empty()) {
    e.shape = "[]";
    e.json["shape"] = nlohmann::json::array();
  }
  e.json["kind"] = e.kind;
  e.json["dtype"] = e.dtype;
  e.json["bytes"] = e.bytes;
  e.json["checksum"] = io::to_hex64(e.checksum);
  return e;
}

nlohmann::json metadata_json(const io::FileMetadata& m) {
  // The configuration is JSON text; embed it as an object when it parses.
  nlohmann::json config = nlohmann::json::parse(m.config, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) config = m.config;
  return {{"format_version", m.format_version},
          {"tenax_version", m.tenax_version},
          {"step", m.step},
          {"rank", m.rank},
          {"world_size", m.world_size},
          {"created", m.created},
          {"config", std::move(config)}};
}

// `--entry NAME`: every value of one entry, at most `limit` of them (0: all).
int show_entry(const Shown& shown, const CkptShowOptions& options, std::ostream& out) {
  const auto& entries = shown.state.entries();
  const auto it = std::find_if(entries.begin(), entries.end(),
                               [&](const auto& e) { return e.first == options.entry; });
  if (it == entries.end()) {
    std::vector<std::string> names;
    for (const auto& e : entries) names.push_back(e.first);
    throw UsageError(fmt::format("'{}' has no entry '{}'", shown.file.string(), options.entry),
                     fmt::format("use one of: {}", fmt::join(names, ", ")));
  }
  const EntryInfo info = describe(it->first, it->second);
  const auto* tensor = std::get_if<Tensor>(&it->second);
  if (tensor == nullptr) {
    nlohmann::json json = info.json;
    if (options.json) {
      out << nlohmann::json{{"file", shown.file.string()}, {"entry", json}}.dump(2) << '\n';
    } else if (const auto* text = std::get_if<std::string>(&it->second)) {
      out << *text << '\n';  // the raw string, for piping (a configuration, say)
    } else {
      out << info.summary.substr(6) << '\n';  // without "value "
    }
    return kCkptValid;
  }
  const std::int64_t total = tensor->numel();
  const std::int64_t shown_count =
      options.limit == 0 ? total
                         : std::min<std::int64_t>(total, static_cast<std::int64_t>(options.limit));
  if (options.json) {
    nlohmann::json json = info.json;
    json.erase("values");
    json.erase("value");
    nlohmann::json values = nlohmann::json::array();
    for (std::int64_t i = 0; i < shown_count; ++i) values.push_back(element_json(*tensor, i));
    json["values"] = std::move(values);
    json["total"] = total;
    json["truncated"] = shown_count < total;
    out << nlohmann::json{{"file", shown.file.string()}, {"entry", json}}.dump(2) << '\n';
    return kCkptValid;
  }
  out << fmt::format("{}: {} {} {}, {} value{}\n", it->first, info.kind, info.dtype, info.shape,
                     total, total == 1 ? "" : "s");
  for (std::int64_t i = 0; i < shown_count; ++i) {
    out << fmt::format("  {}  {}\n", multi_index(tensor->shape(), i), element_text(*tensor, i));
  }
  if (shown_count < total) {
    out << fmt::format("  ... {} more (raise --limit, or --limit 0 for all)\n",
                       total - shown_count);
  }
  return kCkptValid;
}

}  // namespace

// The entry in which the Runner stores how the state is split across the ranks (the table of
// io/shard_layout.hpp, every rank's slabs).
constexpr std::string_view kShardTableEntry = io::runner_entry::shards;

// The sharding of the shown checkpoint: per split tensor, its axis, extent and every rank's slab
// and, for a tensor split into boxes, its further axes and extents and every rank's box (a list
// of [begin, end] per split axis); null when the state holds no table (a state that is not split,
// or replicated); a string saying why when the table cannot be read.
nlohmann::json sharding_json(const Shown& shown) {
  if (!shown.state.contains(kShardTableEntry)) return nullptr;
  io::ShardTable table;
  try {
    table = io::parse_shard_table(shown.state.text(kShardTableEntry), shown.file.string());
  } catch (const Error& e) {
    return std::string("unreadable: ") + e.cause();
  }
  nlohmann::json tensors = nlohmann::json::array();
  for (std::size_t k = 0; k < table.ranks.front().size(); ++k) {
    const io::TensorShard& first = table.ranks.front()[k];
    nlohmann::json slabs = nlohmann::json::array();
    for (const auto& rank : table.ranks) slabs.push_back({rank[k].begin, rank[k].end});
    nlohmann::json tensor = {{"name", first.name},
                             {"axis", first.axis},
                             {"extent", first.extent},
                             {"slabs", std::move(slabs)}};
    if (!first.more.empty()) {
      nlohmann::json axes = nlohmann::json::array();
      nlohmann::json extents = nlohmann::json::array();
      for (const io::AxisRange& r : first.ranges()) {
        axes.push_back(r.axis);
        extents.push_back(r.extent);
      }
      nlohmann::json boxes = nlohmann::json::array();
      for (const auto& rank : table.ranks) {
        nlohmann::json box = nlohmann::json::array();
        for (const io::AxisRange& r : rank[k].ranges()) box.push_back({r.begin, r.end});
        boxes.push_back(std::move(box));
      }
      tensor["axes"] = std::move(axes);
      tensor["extents"] = std::move(extents);
      tensor["boxes"] = std::move(boxes);
    }
    tensors.push_back(std::move(tensor));
  }
  return {{"world_size", table.ranks.size()}, {"tensors", std::move(tensors)}};
}

void print_sharding(const nlohmann::json& sharding, int rank, std::ostream& out) {
  if (sharding.is_null()) return;
  if (sharding.is_string()) {
    out << fmt::format("sharding:        {}\n", sharding.get<std::string>());
    return;
  }
  out << fmt::format(
      "sharding:        {} tensor(s) split across {} rank(s); this file holds rank "
      "{}'s parts (*); a resume on another number of ranks, or split otherwise, divides them "
      "anew\n",
      sharding["tensors"].size(), sharding["world_size"].get<std::size_t>(), rank);
  for (const nlohmann::json& t : sharding["tensors"]) {
    if (t.contains("boxes")) {
      // "workload/u in boxes along axes 0 x 1 of 37 x 40:  0:[0, 18) x [0, 20)* ..."
      const auto joined = [](const nlohmann::json& values) {
        std::string text;
        for (const nlohmann::json& v : values) {
          text += (text.empty() ? "" : " x ") + std::to_string(v.get<std::int64_t>());
        }
        return text;
      };
      std::string boxes;
      int r = 0;
      for (const nlohmann::json& box : t["boxes"]) {
        std::string ranges;
        for (const nlohmann::json& range : box) {
          ranges += fmt::format("{}[{}, {})", ranges.empty() ? "" : " x ",
                                range[0].get<std::int64_t>(), range[1].get<std::int64_t>());
        }
        boxes += fmt::format("  {}:{}{}", r, ranges, r == rank ? "*" : "");
        ++r;
      }
      out << fmt::format("  {} in boxes along axes {} of {}:{}\n", t["name"].get<std::string>(),
                         joined(t["axes"]), joined(t["extents"]), boxes);
      continue;
    }
    std::string slabs;
    int r = 0;
    for (const nlohmann::json& slab : t["slabs"]) {
      slabs += fmt::format("  {}:[{}, {}){}", r, slab[0].get<std::int64_t>(),
                           slab[1].get<std::int64_t>(), r == rank ? "*" : "");
      ++r;
    }
    out << fmt::format("  {} along axis {} of {}:{}\n", t["name"].get<std::string>(),
                       t["axis"].get<int>(), t["extent"].get<std::int64_t>(), slabs);
  }
}

int run_ckpt_show(const std::filesystem::path& path, const CkptShowOptions& options,
                  std::ostream& out) {
  const Shown shown = load(resolve_checkpoint_path(path), options.rank);
  if (!options.entry.empty()) return show_entry(shown, options, out);

  std::vector<EntryInfo> infos;
  for (const auto& [name, value] : shown.state.entries()) infos.push_back(describe(name, value));
  if (options.json) {
    nlohmann::json entries = nlohmann::json::array();
    for (EntryInfo& info : infos) entries.push_back(std::move(info.json));
    nlohmann::json skipped = nlohmann::json::array();
    for (const auto& s : shown.skipped) skipped.push_back({{"step", s.step}, {"reason", s.reason}});
    out << nlohmann::json{{"file", shown.file.string()},
                          {"origin", shown.origin},
                          {"skipped", std::move(skipped)},
                          {"metadata", metadata_json(shown.metadata)},
                          {"sharding", sharding_json(shown)},
                          {"entries", std::move(entries)}}
               .dump(2)
        << '\n';
    return kCkptValid;
  }

  const io::FileMetadata& m = shown.metadata;
  out << fmt::format("file:            {}\n", shown.file.string());
  if (!shown.origin.empty()) out << fmt::format("from:            {}\n", shown.origin);
  for (const auto& s : shown.skipped) {
    out << fmt::format("skipped:         step {}: {}\n", s.step, s.reason);
  }
  out << fmt::format("format version:  {}\n", m.format_version)
      << fmt::format("tenax version:   {}\n", m.tenax_version)
      << fmt::format("step:            {}\n", m.step)
      << fmt::format("rank:            {} of world size {}\n", m.rank, m.world_size)
      << fmt::format("written:         {}\n",
                     m.created.empty() ? modification_time(shown.file) : m.created)
      << fmt::format("config:          {}\n", m.config.empty() ? "(none)" : m.config)
      << fmt::format("entries:         {}\n", infos.size());
  print_sharding(sharding_json(shown), m.rank, out);
  std::size_t name_width = 4, dtype_width = 5, shape_width = 5, bytes_width = 5;
  for (std::size_t i = 0; i < infos.size(); ++i) {
    name_width = std::max(name_width, shown.state.entries()[i].first.size());
    dtype_width = std::max(dtype_width, infos[i].dtype.size());
    shape_width = std::max(shape_width, infos[i].shape.size());
    bytes_width = std::max(bytes_width, std::to_string(infos[i].bytes).size());
  }
  const auto row = [&](std::string_view name, std::string_view kind, std::string_view dtype,
                       std::string_view shape, std::string_view bytes, std::string_view checksum,
                       std::string_view summary) {
    out << fmt::format("  {:<{}}  {:<7}  {:<{}}  {:<{}}  {:>{}}  {:<16}  {}\n", name, name_width,
                       kind, dtype, dtype_width, shape, shape_width, bytes, bytes_width, checksum,
                       summary);
  };
  if (!infos.empty()) row("NAME", "KIND", "DTYPE", "SHAPE", "BYTES", "CHECKSUM", "VALUES");
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const EntryInfo& e = infos[i];
    row(shown.state.entries()[i].first, e.kind, e.dtype, e.shape, std::to_string(e.bytes),
        io::to_hex64(e.checksum), e.summary);
  }
  return kCkptValid;
}

}  // namespace tenax::tools
