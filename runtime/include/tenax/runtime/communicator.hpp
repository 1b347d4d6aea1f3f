// Communicator: how the ranks of a job agree. Every decision that changes what a step does
// (retry, back off, roll back, skip, stop) goes through agree(), so all ranks act alike and never
// diverge. This issue provides the single-rank communicator; MPI and NCCL implementations plug
// in behind the same interface.
#pragma once

#include <cstdint>
#include <memory>

namespace tenax::runtime {

class Communicator {
 public:
  virtual ~Communicator() = default;
  [[nodiscard]] virtual int rank() const noexcept = 0;
  [[nodiscard]] virtual int size() const noexcept = 0;
  // Collective: every rank passes its proposal; every rank gets the largest one. Decisions are
  // ordered by severity, so the most severe proposal wins. Throws CommFaultError on failure.
  [[nodiscard]] virtual std::int64_t agree(std::int64_t proposal) = 0;
  // Collective: returns when every rank has called it.
  virtual void barrier() = 0;
};

class SingleRankCommunicator final : public Communicator {
 public:
  [[nodiscard]] int rank() const noexcept override { return 0; }
  [[nodiscard]] int size() const noexcept override { return 1; }
  [[nodiscard]] std::int64_t agree(std::int64_t proposal) override { return proposal; }
  void barrier() override {}
};

}  // namespace tenax::runtime
