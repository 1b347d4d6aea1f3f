// For tests that an operation allocates nothing: counts the blocks allocated from the CPU memory
// resource while alive.
#pragma once

#include <cstdint>
#include <memory>

#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/memory/statistics_resource.hpp"

namespace tenax::testing {

// Routes the CPU's current memory resource through a StatisticsResource while alive, and restores
// the previous one on destruction.
class CountedAllocations {
 public:
  CountedAllocations()
      : stats_(std::make_shared<StatisticsResource>(current_resource(Device::cpu()))),
        previous_(set_current_resource(Device::cpu(), stats_)) {}
  ~CountedAllocations() { set_current_resource(Device::cpu(), previous_); }
  CountedAllocations(const CountedAllocations&) = delete;
  CountedAllocations& operator=(const CountedAllocations&) = delete;
  // Blocks allocated since construction.
  [[nodiscard]] std::int64_t blocks() const { return stats_->counters().blocks.total; }

 private:
  std::shared_ptr<StatisticsResource> stats_;
  std::shared_ptr<MemoryResource> previous_;
};

}  // namespace tenax::testing
