//===- VramCudaRuntime.cpp - mgpu* ABI and vram's runtime on the driver API ===//
//
// Built on the CUDA driver API only (libcuda, which ships with the driver),
// so a lowered program needs no CUDA toolkit where it runs. Every CUDA error
// is fatal with a message naming the call, the error and what was asked:
// the generated host code has no error path, and continuing would only turn
// the error into a wrong result or a crash further on.
//
//===----------------------------------------------------------------------===//

#include "VramCudaRuntime.h"
#include "LocalDevice.h"

#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace {

[[noreturn]] void fail(const char *call, CUresult result, const char *detail) {
  const char *name = nullptr;
  const char *description = nullptr;
  cuGetErrorName(result, &name);
  cuGetErrorString(result, &description);
  std::fprintf(stderr, "vram_cuda_runtime: %s failed: %s (%s)%s%s\n", call,
               name ? name : "unknown error",
               description ? description : "no description",
               detail ? ": " : "", detail ? detail : "");
  std::abort();
}

void check(CUresult result, const char *call, const char *detail = nullptr) {
  if (result != CUDA_SUCCESS)
    fail(call, result, detail);
}
#define CHECK(call) check((call), #call)

/// Set by mgpuSetDefaultDevice; otherwise chooseLocalDevice decides.
int defaultDevice = -1;

/// The primary context of this process's device (chooseLocalDevice: one
/// per rank of a per-rank program), made current on the calling thread: the
/// generated code may call from any thread, and the primary context is the
/// one the CUDA runtime API (cuBLAS, NCCL, ...) shares.
void ensureContext() {
  static CUcontext context = [] {
    CHECK(cuInit(0));
    int count = 0;
    CHECK(cuDeviceGetCount(&count));
    CUdevice device;
    CHECK(cuDeviceGet(&device, defaultDevice >= 0
                                   ? defaultDevice
                                   : vram::runtime::chooseLocalDevice(count)));
    CUcontext primary;
    CHECK(cuDevicePrimaryCtxRetain(&primary, device));
    return primary;
  }();
  thread_local bool current = false;
  if (!current) {
    CHECK(cuCtxSetCurrent(context));
    current = true;
  }
}

/// Bytes of every live allocation, so that frees can be counted.
struct Counters {
  std::mutex mutex;
  std::unordered_map<void *, uint64_t> deviceAllocations;
  std::unordered_map<void *, uint64_t> pinnedAllocations;
  uint64_t deviceBytesInUse = 0;
  uint64_t peakDeviceBytes = 0;
  uint64_t pinnedBytesInUse = 0;
};

Counters &counters() {
  static Counters *instance = new Counters(); // Outlives static destructors.
  return *instance;
}

/// With VRAM_RUNTIME_REPORT set, prints the counters when the program ends:
/// the device check script reads this line.
struct ExitReport {
  ~ExitReport() {
    if (!std::getenv("VRAM_RUNTIME_REPORT"))
      return;
    uint64_t freeBytes = 0, totalBytes = 0;
    vramRuntimeDeviceMemoryInfo(&freeBytes, &totalBytes);
    std::fprintf(stderr,
                 "vram_cuda_runtime: peak device bytes %llu, in use at exit "
                 "%llu; cuMemGetInfo: %llu used of %llu\n",
                 static_cast<unsigned long long>(vramRuntimePeakDeviceBytes()),
                 static_cast<unsigned long long>(vramRuntimeDeviceBytesInUse()),
                 static_cast<unsigned long long>(totalBytes - freeBytes),
                 static_cast<unsigned long long>(totalBytes));
  }
} exitReport;

/// The stream offloads and prefetches run on, apart from compute.
CUstream copyStream() {
  static CUstream stream = [] {
    ensureContext();
    CUstream created;
    CHECK(cuStreamCreate(&created, CU_STREAM_NON_BLOCKING));
    return created;
  }();
  return stream;
}

/// Makes the copy stream wait for the work queued on `stream` so far.
void copyStreamWaitFor(void *stream) {
  CUevent ready;
  CHECK(cuEventCreate(&ready, CU_EVENT_DISABLE_TIMING));
  CHECK(cuEventRecord(ready, static_cast<CUstream>(stream)));
  CHECK(cuStreamWaitEvent(copyStream(), ready, 0));
  CHECK(cuEventDestroy(ready));
}

/// An event that completes with the copies queued on the copy stream.
void *recordCopyDone() {
  CUevent done;
  CHECK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
  CHECK(cuEventRecord(done, copyStream()));
  return done;
}

/// A ranked memref descriptor: allocated and aligned pointers, offset, then
/// `rank` sizes and `rank` strides.
struct MemRefDescriptor {
  char *allocated;
  char *aligned;
  int64_t offset;
  int64_t sizesAndStrides[];
};

/// The bytes spanned by a memref: its largest offset plus one element.
uint64_t memRefSpanBytes(int64_t rank, const MemRefDescriptor *descriptor,
                         int64_t elementSizeBytes) {
  const int64_t *sizes = descriptor->sizesAndStrides;
  const int64_t *strides = descriptor->sizesAndStrides + rank;
  int64_t lastElement = 0;
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (sizes[dim] == 0)
      return 0;
    lastElement += (sizes[dim] - 1) * strides[dim];
  }
  return static_cast<uint64_t>(lastElement + 1) * elementSizeBytes;
}

} // namespace

extern "C" {

void *mgpuModuleLoad(void *data, size_t sizeBytes) {
  ensureContext();
  CUmodule module;
  (void)sizeBytes; // cubins and fatbins carry their own size.
  check(cuModuleLoadData(&module, data), "cuModuleLoadData",
        "the kernel binary does not fit this GPU (wrong chip=?)");
  return module;
}

void *mgpuModuleLoadJIT(void *data, int optLevel) {
  ensureContext();
  // The driver compiles the PTX for this GPU; its log says why it fails.
  char errorLog[8192] = {0};
  CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL, CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {reinterpret_cast<void *>(static_cast<intptr_t>(optLevel)),
                    errorLog,
                    reinterpret_cast<void *>(sizeof(errorLog) - 1)};
  CUmodule module;
  check(cuModuleLoadDataEx(&module, data, 3, options, values),
        "cuModuleLoadDataEx (PTX JIT)", errorLog);
  return module;
}

// Generated code unloads its module from a global destructor, while the
// process ends; the driver may be shutting down by then (seen on an H200:
// CUDA_ERROR_UNKNOWN after every kernel had run). Aborting there would turn
// a finished run into a failed one, so a failed unload is only reported.
void mgpuModuleUnload(void *module) {
  CUresult result = cuModuleUnload(static_cast<CUmodule>(module));
  if (result != CUDA_SUCCESS) {
    const char *name = nullptr;
    cuGetErrorName(result, &name);
    std::fprintf(stderr, "vram_cuda_runtime: cuModuleUnload failed (%s)\n",
                 name ? name : "unknown CUresult");
  }
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  CUfunction function;
  check(cuModuleGetFunction(&function, static_cast<CUmodule>(module), name),
        "cuModuleGetFunction", name);
  return function;
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t sharedMemoryBytes, void *stream,
                      void **params, void **extra, size_t paramsCount) {
  ensureContext();
  (void)paramsCount; // The kernel's signature gives the count.
  char detail[160];
  std::snprintf(detail, sizeof(detail),
                "grid %ldx%ldx%ld, block %ldx%ldx%ld, %d bytes shared",
                static_cast<long>(gridX), static_cast<long>(gridY),
                static_cast<long>(gridZ), static_cast<long>(blockX),
                static_cast<long>(blockY), static_cast<long>(blockZ),
                sharedMemoryBytes);
  check(cuLaunchKernel(static_cast<CUfunction>(function), gridX, gridY, gridZ,
                       blockX, blockY, blockZ, sharedMemoryBytes,
                       static_cast<CUstream>(stream), params, extra),
        "cuLaunchKernel", detail);
}

void *mgpuStreamCreate() {
  ensureContext();
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  return stream;
}

void mgpuStreamDestroy(void *stream) {
  CHECK(cuStreamDestroy(static_cast<CUstream>(stream)));
}

void mgpuStreamSynchronize(void *stream) {
  // Kernel faults surface here, asynchronously: say so.
  check(cuStreamSynchronize(static_cast<CUstream>(stream)),
        "cuStreamSynchronize",
        "an earlier asynchronous operation on this stream failed");
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  CHECK(cuStreamWaitEvent(static_cast<CUstream>(stream),
                          static_cast<CUevent>(event), 0));
}

void *mgpuEventCreate() {
  ensureContext();
  CUevent event;
  CHECK(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
  return event;
}

void mgpuEventDestroy(void *event) {
  CHECK(cuEventDestroy(static_cast<CUevent>(event)));
}

void mgpuEventSynchronize(void *event) {
  CHECK(cuEventSynchronize(static_cast<CUevent>(event)));
}

void mgpuEventRecord(void *event, void *stream) {
  CHECK(cuEventRecord(static_cast<CUevent>(event),
                      static_cast<CUstream>(stream)));
}

void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared) {
  ensureContext();
  (void)stream; // cuMemAlloc is not stream-ordered.
  if (sizeBytes == 0)
    return nullptr;
  CUdeviceptr ptr;
  CUresult result = isHostShared
                        ? cuMemAllocManaged(&ptr, sizeBytes,
                                            CU_MEM_ATTACH_GLOBAL)
                        : cuMemAlloc(&ptr, sizeBytes);
  Counters &c = counters();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (result != CUDA_SUCCESS) {
    char detail[200];
    std::snprintf(detail, sizeof(detail),
                  "allocating %llu bytes with %llu allocated by this program "
                  "(peak %llu)",
                  static_cast<unsigned long long>(sizeBytes),
                  static_cast<unsigned long long>(c.deviceBytesInUse),
                  static_cast<unsigned long long>(c.peakDeviceBytes));
    fail(isHostShared ? "cuMemAllocManaged" : "cuMemAlloc", result, detail);
  }
  void *address = reinterpret_cast<void *>(ptr);
  c.deviceAllocations[address] = sizeBytes;
  c.deviceBytesInUse += sizeBytes;
  c.peakDeviceBytes = std::max(c.peakDeviceBytes, c.deviceBytesInUse);
  return address;
}

void mgpuMemFree(void *ptr, void *stream) {
  if (!ptr)
    return;
  // Work queued on `stream` may still use the buffer.
  if (stream)
    mgpuStreamSynchronize(stream);
  CHECK(cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)));
  Counters &c = counters();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.deviceAllocations.find(ptr);
  if (it == c.deviceAllocations.end())
    return;
  c.deviceBytesInUse -= it->second;
  c.deviceAllocations.erase(it);
}

void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream) {
  // Unified addressing: the driver tells host from device pointers.
  CHECK(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                      reinterpret_cast<CUdeviceptr>(src), sizeBytes,
                      static_cast<CUstream>(stream)));
}

void mgpuMemset32(void *dst, unsigned value, size_t count, void *stream) {
  CHECK(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                         static_cast<CUstream>(stream)));
}

void mgpuMemset16(void *dst, unsigned short value, size_t count,
                  void *stream) {
  CHECK(cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                         static_cast<CUstream>(stream)));
}

void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes) {
  ensureContext();
  if (sizeBytes == 0)
    return;
  CHECK(cuMemHostRegister(ptr, sizeBytes, CU_MEMHOSTREGISTER_PORTABLE));
}

void mgpuMemHostUnregister(void *ptr) {
  ensureContext();
  CHECK(cuMemHostUnregister(ptr));
}

void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                               int64_t elementSizeBytes) {
  auto *memref = static_cast<MemRefDescriptor *>(descriptor);
  uint64_t bytes = memRefSpanBytes(rank, memref, elementSizeBytes);
  mgpuMemHostRegister(memref->aligned + memref->offset * elementSizeBytes,
                      bytes);
}

void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                 int64_t elementSizeBytes) {
  auto *memref = static_cast<MemRefDescriptor *>(descriptor);
  if (memRefSpanBytes(rank, memref, elementSizeBytes) == 0)
    return;
  mgpuMemHostUnregister(memref->aligned + memref->offset * elementSizeBytes);
}

void mgpuSetDefaultDevice(int32_t device) { defaultDevice = device; }

uint64_t vramRuntimeDeviceBytesInUse() {
  Counters &c = counters();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.deviceBytesInUse;
}

uint64_t vramRuntimePeakDeviceBytes() {
  Counters &c = counters();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.peakDeviceBytes;
}

void vramRuntimeResetPeakDeviceBytes() {
  Counters &c = counters();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.peakDeviceBytes = c.deviceBytesInUse;
}

void vramRuntimeDeviceMemoryInfo(uint64_t *freeBytes, uint64_t *totalBytes) {
  ensureContext();
  size_t free = 0, total = 0;
  CHECK(cuMemGetInfo(&free, &total));
  *freeBytes = free;
  *totalBytes = total;
}

void *vramRuntimeHostAlloc(uint64_t sizeBytes) {
  ensureContext();
  void *ptr = nullptr;
  char detail[64];
  std::snprintf(detail, sizeof(detail), "%llu pinned bytes",
                static_cast<unsigned long long>(sizeBytes));
  check(cuMemHostAlloc(&ptr, sizeBytes, CU_MEMHOSTALLOC_PORTABLE),
        "cuMemHostAlloc", detail);
  Counters &c = counters();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.pinnedAllocations[ptr] = sizeBytes;
  c.pinnedBytesInUse += sizeBytes;
  return ptr;
}

void vramRuntimeHostFree(void *ptr) {
  if (!ptr)
    return;
  CHECK(cuMemFreeHost(ptr));
  Counters &c = counters();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.pinnedAllocations.find(ptr);
  if (it == c.pinnedAllocations.end())
    return;
  c.pinnedBytesInUse -= it->second;
  c.pinnedAllocations.erase(it);
}

uint64_t vramRuntimePinnedHostBytesInUse() {
  Counters &c = counters();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.pinnedBytesInUse;
}

void *vramRuntimeOffloadAsync(void *hostDst, void *deviceSrc,
                              uint64_t sizeBytes, void *stream) {
  ensureContext();
  copyStreamWaitFor(stream);
  CHECK(cuMemcpyDtoHAsync(hostDst, reinterpret_cast<CUdeviceptr>(deviceSrc),
                          sizeBytes, copyStream()));
  return recordCopyDone();
}

void *vramRuntimePrefetchAsync(void *deviceDst, void *hostSrc,
                               uint64_t sizeBytes, void *stream) {
  ensureContext();
  copyStreamWaitFor(stream);
  CHECK(cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(deviceDst), hostSrc,
                          sizeBytes, copyStream()));
  return recordCopyDone();
}

void vramRuntimeFinishCopy(void *copyEvent) {
  CHECK(cuEventSynchronize(static_cast<CUevent>(copyEvent)));
  CHECK(cuEventDestroy(static_cast<CUevent>(copyEvent)));
}

void vramRuntimeWaitCopy(void *copyEvent, void *stream) {
  CHECK(cuStreamWaitEvent(static_cast<CUstream>(stream),
                          static_cast<CUevent>(copyEvent), 0));
  // Safe while the wait is pending: the driver frees it once complete.
  CHECK(cuEventDestroy(static_cast<CUevent>(copyEvent)));
}

} // extern "C"
