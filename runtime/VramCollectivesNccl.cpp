//===- VramCollectivesNccl.cpp - per-rank collectives on GPUs, with NCCL --===//
//
// The GPU twin of VramCollectives.cpp: the same functions (a per-rank
// program's host code links one or the other), on device buffers, through
// NCCL. One process per rank and GPU (LocalDevice.h picks it); MPI starts
// the processes and carries the communicator's id from rank 0 to the others.
// Averages are NCCL's ncclAvg, in the data's type. A collective over one
// axis of the grid runs on its group's communicator, split from the world's
// (ncclCommSplit) on first use.
//
// Ordering as for the libraries (VramGpuLibraries.cpp): the host waited for
// the compute stream before the call; the collective runs on a stream of its
// own and is waited for before returning.
//
//===----------------------------------------------------------------------===//

#include "CollectivesAbi.h"
#include "LocalDevice.h"
#include "MpiTransfers.h"
#include "MpiWorld.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <utility>
#include <vector>

using namespace vram::runtime;

namespace {

void check(cudaError_t result, const char *call) {
  if (result != cudaSuccess) {
    char message[256];
    std::snprintf(message, sizeof message, "%s: %s", call,
                  cudaGetErrorString(result));
    failCollective(message);
  }
}
void check(ncclResult_t result, const char *call) {
  if (result != ncclSuccess) {
    char message[256];
    std::snprintf(message, sizeof message, "%s: %s", call,
                  ncclGetErrorString(result));
    failCollective(message);
  }
}
#define CHECK(call) check((call), #call)

/// The world's communicator, and the stream collectives run on; made on
/// first use.
struct World {
  ncclComm_t comm;
  cudaStream_t stream;
};

World &world() {
  static World made = [] {
    int rank = joinWorld(), ranks = getWorldSize();
    int devices = 0;
    CHECK(cudaGetDeviceCount(&devices));
    CHECK(cudaSetDevice(chooseLocalDevice(devices)));
    ncclUniqueId id;
    if (rank == 0)
      CHECK(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    World result;
    CHECK(ncclCommInitRank(&result.comm, ranks, id, rank));
    CHECK(cudaStreamCreateWithFlags(&result.stream, cudaStreamNonBlocking));
    return result;
  }();
  return made;
}

/// The communicator of `group`.
ncclComm_t communicator(RankGroup group) {
  static std::map<std::pair<int64_t, int64_t>, ncclComm_t> made;
  World &w = world();
  group.check();
  if (group.size == getWorldSize())
    return w.comm;
  auto [it, inserted] = made.try_emplace({group.size, group.stride}, nullptr);
  if (inserted) {
    int rank = joinWorld();
    CHECK(ncclCommSplit(w.comm, int(group.colorOf(rank)),
                        int(group.indexOf(rank)), &it->second, nullptr));
  }
  return it->second;
}

template <typename T> struct NcclType;
template <> struct NcclType<float> {
  static constexpr ncclDataType_t value = ncclFloat32;
};
template <> struct NcclType<double> {
  static constexpr ncclDataType_t value = ncclFloat64;
};
/// Half types by their storage: f16 and bf16 are both 2 bytes.
struct F16Storage {
  uint16_t bits;
};
struct BF16Storage {
  uint16_t bits;
};
template <> struct NcclType<F16Storage> {
  static constexpr ncclDataType_t value = ncclFloat16;
};
template <> struct NcclType<BF16Storage> {
  static constexpr ncclDataType_t value = ncclBfloat16;
};

template <typename T>
void allReduce(UnrankedMemRef *buffer, RankGroup group, bool average) {
  ncclComm_t comm = communicator(group);
  cudaStream_t stream = world().stream;
  Span span = getCollectiveSpan(buffer, sizeof(T));
  CHECK(ncclAllReduce(span.data, span.data, size_t(span.elements),
                      NcclType<T>::value, average ? ncclAvg : ncclSum, comm,
                      stream));
  CHECK(cudaStreamSynchronize(stream));
}

template <typename T>
void allGather(UnrankedMemRef *input, UnrankedMemRef *output, RankGroup group) {
  ncclComm_t comm = communicator(group);
  cudaStream_t stream = world().stream;
  Span in = getCollectiveSpan(input, sizeof(T)),
       out = getCollectiveSpan(output, sizeof(T));
  if (out.elements != in.elements * group.size)
    failCollective("all-gather: the output is not ranks x the input");
  CHECK(ncclAllGather(in.data, out.data, size_t(in.elements),
                      NcclType<T>::value, comm, stream));
  CHECK(cudaStreamSynchronize(stream));
}

template <typename T>
void reduceScatter(UnrankedMemRef *input, UnrankedMemRef *output,
                   RankGroup group, bool average) {
  ncclComm_t comm = communicator(group);
  cudaStream_t stream = world().stream;
  Span in = getCollectiveSpan(input, sizeof(T)),
       out = getCollectiveSpan(output, sizeof(T));
  if (in.elements != out.elements * group.size)
    failCollective("reduce-scatter: the input is not ranks x the output");
  CHECK(ncclReduceScatter(in.data, out.data, size_t(out.elements),
                          NcclType<T>::value, average ? ncclAvg : ncclSum, comm,
                          stream));
  CHECK(cudaStreamSynchronize(stream));
}

} // namespace

namespace {
/// A pipeline's transfer through host memory, as an MPI message: the
/// sender does not wait for the receiver (two stages that send to each
/// other at once would block both their streams with NCCL's send and
/// receive), at the price of a copy each way over the host link.
struct StagedTransfer {
  Span device;
  TransferEnd end;
  std::vector<char> host;

  StagedTransfer(UnrankedMemRef *buffer, int64_t size, int64_t stride,
                 int64_t peer, int64_t elementBytes)
      : device(getCollectiveSpan(buffer, elementBytes)),
        end(size, stride, peer, device.elements * elementBytes),
        host(end.bytes) {}
};
} // namespace

extern "C" void _mlir_ciface_vramCollectiveSend(UnrankedMemRef *buffer,
                                                int64_t size, int64_t stride,
                                                int64_t peer,
                                                int64_t elementBytes) {
  StagedTransfer transfer(buffer, size, stride, peer, elementBytes);
  // Not NCCL's stream: making the communicator waits for every rank, and
  // the next stage may be waiting for this message.
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(transfer.host.data(), transfer.device.data,
                   transfer.end.bytes, cudaMemcpyDeviceToHost));
  sendBytes(transfer.host.data(), transfer.end);
}

extern "C" void _mlir_ciface_vramCollectiveRecv(UnrankedMemRef *buffer,
                                                int64_t size, int64_t stride,
                                                int64_t peer,
                                                int64_t elementBytes) {
  StagedTransfer transfer(buffer, size, stride, peer, elementBytes);
  receiveBytes(transfer.host.data(), transfer.end);
  CHECK(cudaMemcpy(transfer.device.data, transfer.host.data(),
                   transfer.end.bytes, cudaMemcpyHostToDevice));
}

extern "C" int64_t vramCollectiveRank(int64_t ranks) {
  int rank = joinWorld(ranks);
  world();
  return rank;
}

extern "C" int64_t vramCollectiveGroupIndex(int64_t size, int64_t stride) {
  return RankGroup{size, stride}.indexOf(joinWorld());
}

VRAM_DEFINE_COLLECTIVES(f32, float)
VRAM_DEFINE_COLLECTIVES(f64, double)
VRAM_DEFINE_COLLECTIVES(f16, F16Storage)
VRAM_DEFINE_COLLECTIVES(bf16, BF16Storage)
