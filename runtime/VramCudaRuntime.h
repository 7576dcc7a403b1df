/*===- VramCudaRuntime.h - vram's CUDA runtime: C API -------------*- C -*-===*\
|*                                                                            *|
|* libvram_cuda_runtime implements the mgpu* functions that MLIR's GPU-to-LLVM *|
|* lowering calls (declared here for C callers and tests), plus vram's own     *|
|* functions: device-memory counters and the asynchronous copies the planner's *|
|* offload and prefetch lower to. docs/gpu.md describes every function.        *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef VRAM_CUDA_RUNTIME_H
#define VRAM_CUDA_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI of LLVM 22's GPU-to-LLVM lowering (convert-gpu-to-llvm and the
 * gpu.binary translation). Handles are CUmodule, CUfunction, CUstream and
 * CUevent, passed as opaque pointers. */
void *mgpuModuleLoad(void *data, size_t sizeBytes);
void *mgpuModuleLoadJIT(void *data, int optLevel);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t sharedMemoryBytes, void *stream,
                      void **params, void **extra, size_t paramsCount);
void *mgpuStreamCreate(void);
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamWaitEvent(void *stream, void *event);
void *mgpuEventCreate(void);
void mgpuEventDestroy(void *event);
void mgpuEventSynchronize(void *event);
void mgpuEventRecord(void *event, void *stream);
void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream);
void mgpuMemset32(void *dst, unsigned value, size_t count, void *stream);
void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream);
void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes);
void mgpuMemHostUnregister(void *ptr);
/* `descriptor` points to a ranked memref descriptor of rank `rank`. */
void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                               int64_t elementSizeBytes);
void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                 int64_t elementSizeBytes);
void mgpuSetDefaultDevice(int32_t device);

/* Device memory allocated through mgpuMemAlloc and not yet freed, and the
 * most that ever was since the start or the last reset. */
uint64_t vramRuntimeDeviceBytesInUse(void);
uint64_t vramRuntimePeakDeviceBytes(void);
/* Sets the peak to the bytes in use now. */
void vramRuntimeResetPeakDeviceBytes(void);
/* cuMemGetInfo: what the driver sees, CUDA context and other processes
 * included. */
void vramRuntimeDeviceMemoryInfo(uint64_t *freeBytes, uint64_t *totalBytes);

/* Pinned (page-locked) host memory, the home of offloaded tensors: copies
 * from and to it run asynchronously at full PCIe/NVLink bandwidth. */
void *vramRuntimeHostAlloc(uint64_t sizeBytes);
void vramRuntimeHostFree(void *ptr);
uint64_t vramRuntimePinnedHostBytesInUse(void);

/* Offload (device -> pinned host) and prefetch (pinned host -> device) on
 * the runtime's copy stream, so that they overlap the compute on `stream`.
 * The copy starts once the work queued on `stream` so far is done (the data
 * is ready); the returned event completes with the copy. Pass it to
 * vramRuntimeWaitCopy before the compute stream uses (prefetch) or frees
 * (offload) the buffer. */
void *vramRuntimeOffloadAsync(void *hostDst, void *deviceSrc,
                              uint64_t sizeBytes, void *stream);
void *vramRuntimePrefetchAsync(void *deviceDst, void *hostSrc,
                               uint64_t sizeBytes, void *stream);
/* Makes `stream` wait for the copy's event, then releases the event. */
void vramRuntimeWaitCopy(void *copyEvent, void *stream);
/* Blocks the calling thread until the copy is done, then releases the event:
 * what vram-gpu-overlap-copies emits, where the host code has no stream
 * handle (a null `stream` above means the legacy stream, which does not
 * order the lowered code's non-blocking streams). */
void vramRuntimeFinishCopy(void *copyEvent);

#ifdef __cplusplus
}
#endif

#endif /* VRAM_CUDA_RUNTIME_H */
