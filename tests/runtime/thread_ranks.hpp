// Runs a body on N ranks of the threads communicator, one thread per rank, for the tests.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tenax/runtime/communicator.hpp"

namespace tenax::testing {

// Runs body(rank, comm) on one thread per rank (collectives under `timeout` seconds); returns
// each rank's error text ("" if none).
inline std::vector<std::string> on_thread_ranks(
    int size, double timeout, const std::function<void(int, runtime::Communicator&)>& body) {
  runtime::CommOptions options;
  options.timeout_seconds = timeout;
  auto comms = runtime::make_thread_communicators(size, options);
  std::vector<std::string> errors(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r, *comms[static_cast<std::size_t>(r)]);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace tenax::testing
