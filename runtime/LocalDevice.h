//===- LocalDevice.h - which GPU this process uses --------------*- C++ -*-===//

#ifndef VRAM_RUNTIME_LOCALDEVICE_H
#define VRAM_RUNTIME_LOCALDEVICE_H

#include <cstdlib>
#include <initializer_list>

namespace vram::runtime {

/// The GPU of this process, out of `deviceCount`: VRAM_CUDA_DEVICE when set,
/// else its rank on this node as a launcher gives it (torchrun's LOCAL_RANK,
/// Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, MPICH's MPI_LOCALRANKID, Slurm's
/// SLURM_LOCALID) modulo the count, else 0. The driver runtime and the NCCL
/// collectives choose alike, so a per-rank program's buffers and its
/// communicator are on one device.
inline int chooseLocalDevice(int deviceCount) {
  if (const char *device = std::getenv("VRAM_CUDA_DEVICE"))
    return std::atoi(device);
  for (const char *name : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                           "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char *rank = std::getenv(name))
      return deviceCount > 0 ? std::atoi(rank) % deviceCount : 0;
  return 0;
}

} // namespace vram::runtime

#endif // VRAM_RUNTIME_LOCALDEVICE_H
