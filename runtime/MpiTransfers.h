//===- MpiTransfers.h - a pipeline's messages between ranks -----*- C++ -*-===//
//
// shard.send / shard.recv between pipeline stages (lib/Conversion/
// Collectives), as MPI messages between world ranks: the MPI runtime sends
// its buffers, the NCCL runtime stages device buffers through host memory.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_RUNTIME_MPITRANSFERS_H
#define VRAM_RUNTIME_MPITRANSFERS_H

#include "MpiWorld.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <vector>

namespace vram::runtime {

/// Sends still in flight, each from its own copy of the data: a pipeline
/// stage sends its output and goes on (its next forward, a backward) before
/// the next stage has received it, and with blocking sends two stages that
/// send to each other at once would wait forever; the program may also
/// reuse the sent buffer at once. Completed ones are dropped at each
/// transfer; the rest are waited for before MPI finalizes.
struct PendingSend {
  MPI_Request request;
  std::vector<char> data;
};

inline std::vector<PendingSend> &pendingSends() {
  // Never destroyed: the exit handler that waits for them runs after
  // static destructors registered later than it.
  static auto *sends = new std::vector<PendingSend>;
  return *sends;
}

inline void dropCompletedSends() {
  auto &sends = pendingSends();
  sends.erase(std::remove_if(sends.begin(), sends.end(),
                             [](PendingSend &send) {
                               int done = 0;
                               MPI_Test(&send.request, &done,
                                        MPI_STATUS_IGNORE);
                               return done != 0;
                             }),
              sends.end());
}

inline void waitForSends() {
  for (PendingSend &send : pendingSends())
    MPI_Wait(&send.request, MPI_STATUS_IGNORE);
  pendingSends().clear();
}

/// The world rank at the other end of a transfer to or from index `peer`
/// of this rank's group, and the transfer's size in bytes, checked.
struct TransferEnd {
  int worldRank;
  int bytes;

  TransferEnd(int64_t size, int64_t stride, int64_t peer, int64_t bytes64) {
    RankGroup group{size, stride};
    group.check();
    int64_t self = joinWorld();
    if (peer < 0 || peer >= group.size || peer == group.indexOf(self))
      failCollective("a transfer to or from a rank outside the group, or to "
                     "itself");
    if (bytes64 > INT_MAX)
      failCollective("a transfer of more than 2 GiB (MPI counts in int)");
    worldRank = int(self + (peer - group.indexOf(self)) * group.stride);
    bytes = int(bytes64);
    dropCompletedSends();
  }
};

/// Sends `end.bytes` bytes of `data` without waiting for the receiver.
inline void sendBytes(const char *data, const TransferEnd &end) {
  static bool waitsAtExit = (std::atexit(waitForSends), true);
  (void)waitsAtExit;
  PendingSend &send = pendingSends().emplace_back(
      PendingSend{MPI_REQUEST_NULL, std::vector<char>(data, data + end.bytes)});
  MPI_Isend(send.data.data(), end.bytes, MPI_BYTE, end.worldRank,
            /*tag=*/0, MPI_COMM_WORLD, &send.request);
}

/// Receives exactly `end.bytes` bytes into `data`.
inline void receiveBytes(char *data, const TransferEnd &end) {
  MPI_Status status;
  MPI_Recv(data, end.bytes, MPI_BYTE, end.worldRank, /*tag=*/0, MPI_COMM_WORLD,
           &status);
  int received = 0;
  MPI_Get_count(&status, MPI_BYTE, &received);
  if (received != end.bytes)
    failCollective("a transfer received a message of another size than its "
                   "buffer");
}

} // namespace vram::runtime

#endif // VRAM_RUNTIME_MPITRANSFERS_H
