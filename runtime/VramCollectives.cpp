//===- VramCollectives.cpp - the collectives of per-rank programs, on MPI -===//
//
// What a per-rank program's shard collectives bufferize into
// (lib/Conversion/Collectives): one process per rank of MPI_COMM_WORLD; a
// collective over one axis of the grid runs on the communicator of that
// axis's group (MPI_Comm_split, made once per group). MPI starts on the
// first call and finalizes at exit, so a program run under `mpirun` needs
// nothing else. Sums and averages are summed in f32 or f64 (averages divided
// once); half-precision data is widened first (MPI has no half types) and
// rounded once.
//
//===----------------------------------------------------------------------===//

#include "CollectivesAbi.h"
#include "MpiTransfers.h"
#include "MpiWorld.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

using namespace vram::runtime;

namespace {

/// Element types: how they are stored and widened for arithmetic.
struct F32 {
  using Stored = float;
  using Wide = float;
  static MPI_Datatype wideType() { return MPI_FLOAT; }
  static Wide widen(Stored x) { return x; }
  static Stored narrow(Wide x) { return x; }
};
struct F64 {
  using Stored = double;
  using Wide = double;
  static MPI_Datatype wideType() { return MPI_DOUBLE; }
  static Wide widen(Stored x) { return x; }
  static Stored narrow(Wide x) { return x; }
};
struct F16 {
  using Stored = _Float16;
  using Wide = float;
  static MPI_Datatype wideType() { return MPI_FLOAT; }
  static Wide widen(Stored x) { return static_cast<float>(x); }
  static Stored narrow(Wide x) { return static_cast<_Float16>(x); }
};
struct BF16 {
  using Stored = uint16_t;
  using Wide = float;
  static MPI_Datatype wideType() { return MPI_FLOAT; }
  static Wide widen(Stored x) {
    uint32_t bits = uint32_t(x) << 16;
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
  }
  static Stored narrow(Wide x) {
    // Round to nearest even, NaN kept a NaN.
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    if (std::isnan(x))
      return uint16_t((bits >> 16) | 0x40);
    bits += 0x7fff + ((bits >> 16) & 1);
    return uint16_t(bits >> 16);
  }
};

template <typename T> std::vector<typename T::Wide> widen(Span span) {
  auto *data = reinterpret_cast<typename T::Stored *>(span.data);
  std::vector<typename T::Wide> wide(span.elements);
  for (int64_t i = 0; i < span.elements; ++i)
    wide[i] = T::widen(data[i]);
  return wide;
}

/// Writes `sums` into `out`, divided by `divisor`.
template <typename T>
void narrow(const std::vector<typename T::Wide> &sums, int64_t divisor,
            Span out) {
  auto *data = reinterpret_cast<typename T::Stored *>(out.data);
  for (int64_t i = 0; i < out.elements; ++i)
    data[i] = T::narrow(sums[i] / typename T::Wide(divisor));
}

/// The communicator of this rank's `group`, made on first use by the
/// group's members alone (MPI_Comm_create_group): the stages of a pipeline
/// reach their first collective at different times, and one waiting for the
/// world (MPI_Comm_split) would wait for a stage that waits for its data.
MPI_Comm communicator(RankGroup group) {
  static std::map<std::pair<int64_t, int64_t>, MPI_Comm> made;
  int rank = joinWorld();
  group.check();
  if (group.size == getWorldSize())
    return MPI_COMM_WORLD;
  auto [it, inserted] =
      made.try_emplace({group.size, group.stride}, MPI_COMM_NULL);
  if (inserted) {
    std::vector<int> members(group.size);
    int64_t first = rank - group.indexOf(rank) * group.stride;
    for (int64_t i = 0; i < group.size; ++i)
      members[i] = int(first + i * group.stride);
    MPI_Group world, mine;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, int(group.size), members.data(), &mine);
    MPI_Comm_create_group(MPI_COMM_WORLD, mine, /*tag=*/1, &it->second);
    MPI_Group_free(&mine);
    MPI_Group_free(&world);
  }
  return it->second;
}

template <typename T>
void allReduce(UnrankedMemRef *buffer, RankGroup group, bool average) {
  MPI_Comm comm = communicator(group);
  Span span = getCollectiveSpan(buffer, sizeof(typename T::Stored));
  std::vector<typename T::Wide> sums = widen<T>(span);
  MPI_Allreduce(MPI_IN_PLACE, sums.data(), int(span.elements), T::wideType(),
                MPI_SUM, comm);
  narrow<T>(sums, average ? group.size : 1, span);
}

template <typename T>
void allGather(UnrankedMemRef *input, UnrankedMemRef *output, RankGroup group) {
  MPI_Comm comm = communicator(group);
  Span in = getCollectiveSpan(input, sizeof(typename T::Stored));
  Span out = getCollectiveSpan(output, sizeof(typename T::Stored));
  if (out.elements != in.elements * group.size)
    failCollective("all-gather: the output is not ranks x the input");
  int bytes = int(in.elements * sizeof(typename T::Stored));
  MPI_Allgather(in.data, bytes, MPI_BYTE, out.data, bytes, MPI_BYTE, comm);
}

template <typename T>
void reduceScatter(UnrankedMemRef *input, UnrankedMemRef *output,
                   RankGroup group, bool average) {
  MPI_Comm comm = communicator(group);
  Span in = getCollectiveSpan(input, sizeof(typename T::Stored));
  Span out = getCollectiveSpan(output, sizeof(typename T::Stored));
  if (in.elements != out.elements * group.size)
    failCollective("reduce-scatter: the input is not ranks x the output");
  std::vector<typename T::Wide> wide = widen<T>(in);
  std::vector<typename T::Wide> sums(out.elements);
  MPI_Reduce_scatter_block(wide.data(), sums.data(), int(out.elements),
                           T::wideType(), MPI_SUM, comm);
  narrow<T>(sums, average ? group.size : 1, out);
}

} // namespace

extern "C" void _mlir_ciface_vramCollectiveSend(UnrankedMemRef *buffer,
                                                int64_t size, int64_t stride,
                                                int64_t peer,
                                                int64_t elementBytes) {
  Span span = getCollectiveSpan(buffer, elementBytes);
  sendBytes(span.data,
            TransferEnd(size, stride, peer, span.elements * elementBytes));
}

extern "C" void _mlir_ciface_vramCollectiveRecv(UnrankedMemRef *buffer,
                                                int64_t size, int64_t stride,
                                                int64_t peer,
                                                int64_t elementBytes) {
  Span span = getCollectiveSpan(buffer, elementBytes);
  receiveBytes(span.data,
               TransferEnd(size, stride, peer, span.elements * elementBytes));
}

extern "C" int64_t vramCollectiveRank(int64_t ranks) {
  return joinWorld(ranks);
}

extern "C" int64_t vramCollectiveGroupIndex(int64_t size, int64_t stride) {
  return RankGroup{size, stride}.indexOf(joinWorld());
}

VRAM_DEFINE_COLLECTIVES(f32, F32)
VRAM_DEFINE_COLLECTIVES(f64, F64)
VRAM_DEFINE_COLLECTIVES(f16, F16)
VRAM_DEFINE_COLLECTIVES(bf16, BF16)
