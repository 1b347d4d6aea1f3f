// The memory resource contract (resource_contract.hpp) passed by the host resources and by every
// adaptor over them.
#include <memory>

#include "core/resource_contract.hpp"
#include "tenax/core/fault_injection.hpp"
#include "tenax/core/memory/device_memory.hpp"
#include "tenax/core/memory/fault_injecting_resource.hpp"
#include "tenax/core/memory/history_resource.hpp"
#include "tenax/core/memory/host_resource.hpp"
#include "tenax/core/memory/host_virtual_memory.hpp"
#include "tenax/core/memory/limiting_resource.hpp"
#include "tenax/core/memory/pool_resource.hpp"
#include "tenax/core/memory/statistics_resource.hpp"

namespace tenax::testing {
namespace {

std::shared_ptr<MemoryResource> host_pool() {
  PoolOptions options;
  options.capacity = std::size_t{512} << 20;
  return std::make_shared<PoolResource>(std::make_shared<HostVirtualMemory>(), options);
}

INSTANTIATE_TEST_SUITE_P(
    Host, ResourceContract,
    ::testing::Values(
        ResourceCase{"HostResource", [] { return std::make_shared<HostResource>(); }},
        ResourceCase{"HostPool", host_pool},
        ResourceCase{"CurrentCpuResource", [] { return current_resource(Device::cpu()); }},
        ResourceCase{
            "Limiting",
            [] { return std::make_shared<LimitingResource>(host_pool(), std::size_t{256} << 20); }},
        ResourceCase{"Statistics",
                     [] { return std::make_shared<StatisticsResource>(host_pool()); }},
        ResourceCase{"History", [] { return std::make_shared<HistoryResource>(host_pool()); }},
        ResourceCase{"FaultInjectingWithoutFaults",
                     [] {
                       return std::make_shared<FaultInjectingResource>(
                           host_pool(), std::make_shared<const FaultPlan>());
                     }}),
    resource_case_name);

}  // namespace
}  // namespace tenax::testing
