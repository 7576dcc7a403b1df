// harness_support.c - what the harness of scripts/gpu_check/harness.py
// calls to print and time, in one small library for the CPU run (through
// mlir-runner) and the GPU executable alike, so that both print the same
// way. MLIR's own runner utilities would do, but Debian's link libMLIR.so,
// which is too large to take to a machine that has only a GPU driver.
// Every function flushes: what was printed must survive a later abort.
#include <stdint.h>
#include <stdio.h>
#include <time.h>

// The descriptor an unranked memref points to: allocated and aligned
// pointers, offset, then rank sizes and rank strides.
typedef struct {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizesAndStrides[];
} Descriptor;

static int64_t elementCount(int64_t rank, const Descriptor *descriptor) {
  int64_t count = 1;
  for (int64_t i = 0; i < rank; ++i)
    count *= descriptor->sizesAndStrides[i];
  return count;
}

// The harness passes only contiguous, identity-layout buffers.
void vramCheckPrintF32(int64_t rank, const Descriptor *descriptor) {
  const float *data = (const float *)descriptor->aligned + descriptor->offset;
  int64_t count = elementCount(rank, descriptor);
  printf("values %lld\n", (long long)count);
  for (int64_t i = 0; i < count; ++i)
    printf("%.9g\n", data[i]);
  fflush(stdout);
}

void vramCheckPrintChecksum(int64_t rank, const Descriptor *descriptor) {
  const double *data = (const double *)descriptor->aligned + descriptor->offset;
  (void)rank;
  printf("checksum %.17g %.17g\n", data[0], data[1]);
  fflush(stdout);
}

void vramCheckBeginResult(int64_t index) {
  printf("result %lld\n", (long long)index);
  fflush(stdout);
}

void vramCheckPrintSeconds(double seconds) {
  printf("seconds-per-call %.9g\n", seconds);
  fflush(stdout);
}

void vramCheckPrintDeviceBytes(int64_t before, int64_t peak) {
  printf("device-bytes-before %lld\ndevice-bytes-peak %lld\n",
         (long long)before, (long long)peak);
  fflush(stdout);
}

double vramCheckClock(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}
