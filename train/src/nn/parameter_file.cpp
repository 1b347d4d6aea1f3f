#include "tenax/train/nn/parameter_file.hpp"

#include <string>
#include <utility>
#include <variant>

#include "tenax/core/error.hpp"
#include "tenax/io/dataset_file.hpp"

namespace tenax::train::nn {
namespace {

constexpr const char* kGroup = "params/";

}  // namespace

StateDict parameter_file_entries(const Module& model) {
  StateDict entries;
  const StateDict state = model.state_dict();
  for (const auto& [name, value] : state.entries()) {
    entries.set(kGroup + name, std::get<Tensor>(value).to(Device::cpu()));
  }
  return entries;
}

void load_parameter_file(Module& model, const std::filesystem::path& path) {
  const StateDict wanted = model.state_dict();
  const std::string file = path.string();
  StateDict loaded;
  for (const auto& entry : wanted.entries()) {
    const std::string dataset = kGroup + entry.first;
    TENAX_EXPECTS(io::has_dataset(path, dataset), UsageError,
                  file + " has no dataset /" + dataset + ", which the model holds",
                  "start from a file written by a model of the same structure (its /params/ "
                  "datasets are named as the model's state_dict())");
    Tensor saved = io::read_dataset(path, dataset);
    const Shape& expected = std::get<Tensor>(entry.second).shape();
    TENAX_EXPECTS(saved.shape() == expected, UsageError,
                  file + ": /" + dataset + " has shape " + to_string(saved.shape()) +
                      " but the model's " + entry.first + " is " + to_string(expected),
                  "start from a file of the same model (the same layers and sizes)");
    loaded.set(entry.first, std::move(saved));
  }
  // A parameter the model does not have means the file is of another model: refuse it rather
  // than start from a part of it.
  const io::DatasetListing held = io::list_datasets(path, 1'000'000);
  for (const std::string& name : held.names) {
    if (!name.starts_with(kGroup)) continue;
    TENAX_EXPECTS(wanted.contains(name.substr(std::char_traits<char>::length(kGroup))), UsageError,
                  file + " holds /" + name + ", which the model does not have",
                  "start from a file of the same model (the same layers and sizes)");
  }
  model.load_state_dict(loaded);  // names both shapes when one differs
}

}  // namespace tenax::train::nn
