//===- VramCpuKernels.cpp - Heavy CPU ops through BLAS --------------------===//
//
// The functions vram-call-library-kernels puts in place of f32 linalg.matmul
// (transposed operands included), linalg.batch_matmul, the 1-d, 2-d and 3-d
// linalg convolutions (conv_1d_ncw_fcw, conv_2d_nchw_fchw,
// conv_3d_ncdhw_fcdhw) and the grouped linalg.conv_2d_ngchw_gfchw on the CPU
// path, on CBLAS (OpenBLAS from Debian); each convolution also as a `_bias`
// variant that sets the output to a bias per feature before accumulating. They
// take memref descriptors as MLIR's C interface passes them
// (`_mlir_ciface_<name>`, a pointer per memref) and, like the linalg ops they
// replace, accumulate into the output. The pass only calls them on contiguous
// row-major memrefs (the identity layout), so sizes are all they read of the
// strides.
//
//===----------------------------------------------------------------------===//

#include "VramCpuKernels.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

using vram::cpu::MemRef;

namespace {

/// Products smaller than this many multiply-adds run on one thread: the
/// threads' start costs more than they save.
constexpr int64_t kParallelProductSize = int64_t(1) << 21;

/// Passes over memory (an im2col matrix unfolded, bias rows written) of
/// fewer elements than this run on one thread.
constexpr int64_t kParallelPassSize = int64_t(1) << 16;

/// The threads a loop over independent work gets here: all of OpenMP's,
/// or one inside a loop that already runs on them.
int getThreads() { return omp_in_parallel() ? 1 : omp_get_max_threads(); }

/// Whether a pass writing `elements` values is worth sharing out among the
/// threads here.
bool sharesPass(int64_t elements) {
  return getThreads() > 1 && elements >= kParallelPassSize;
}

/// C[m x n] += op(A) op(B), row-major, where op(A) = A[m x k], or A^T with A
/// stored k x m where `transA`, and op(B) = B[k x n], or B^T with B stored
/// n x k where `transB`. BLAS runs on one thread (JitRunner.cpp); a large
/// product is split between OpenMP's threads, so that one pool of threads
/// serves the kernels (two pools waiting for each other took the cores from
/// each other): by columns of C in blocks of a multiple of 16 (a cache
/// line), or by rows where C has too few columns to go round (a late
/// layer's convolution over 7 x 7 positions of one image).
void accumulateProduct(const float *a, const float *b, float *c, int64_t m,
                       int64_t n, int64_t k, bool transA = false,
                       bool transB = false) {
  if (m == 0 || n == 0)
    return;
  int64_t lda = transA ? m : k, ldb = transB ? k : n;
  auto product = [&](int64_t firstRow, int64_t rows, int64_t firstColumn,
                     int64_t columns) {
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, rows, columns, k, 1.0f,
                a + (transA ? firstRow : firstRow * lda), lda,
                b + (transB ? firstColumn * ldb : firstColumn), ldb, 1.0f,
                c + firstRow * n + firstColumn, n);
  };
  int64_t threads = getThreads();
  bool byColumns = n >= 32 * threads, byRows = m >= 16 * threads;
  if (threads == 1 || m * n * k < kParallelProductSize ||
      (!byColumns && !byRows))
    return product(0, m, 0, n);
  int64_t extent = byColumns ? n : m;
  int64_t block = (extent + threads - 1) / threads;
  block = (block + 15) / 16 * 16;
#pragma omp parallel for schedule(static)
  for (int64_t first = 0; first < extent; first += block) {
    int64_t size = std::min(block, extent - first);
    if (byColumns)
      product(0, m, first, size);
    else
      product(first, size, 0, n);
  }
}

/// The sizes and steps of one convolution with up to three spatial dims
/// (depth, height, width; a missing dim has size, kernel, stride and
/// dilation 1): an image of C channels convolved with F filters of
/// C x KD x KH x KW into F x OD x OH x OW.
struct ConvShape {
  int64_t channels, features;
  int64_t in[3], kernel[3], out[3], stride[3], dilation[3];

  int64_t imageSize() const { return channels * in[0] * in[1] * in[2]; }
  int64_t filterSize() const {
    return features * channels * kernel[0] * kernel[1] * kernel[2];
  }
  int64_t outputSize() const { return features * out[0] * out[1] * out[2]; }
};

/// The ConvShape of an N x C x <spatial> input, F x C x <kernel> filter and
/// N x F x <out> output (memref sizes, the batch and group dims already
/// dropped by the caller: `channels`, `features` and the Spatial trailing
/// sizes of each) with the given strides and dilations.
template <int Spatial>
ConvShape makeConvShape(int64_t channels, int64_t features,
                        const int64_t *inSizes, const int64_t *kernelSizes,
                        const int64_t *outSizes, const int64_t *strides,
                        const int64_t *dilations) {
  ConvShape s{channels,  features,  {1, 1, 1}, {1, 1, 1},
              {1, 1, 1}, {1, 1, 1}, {1, 1, 1}};
  for (int i = 0; i < Spatial; ++i) {
    int d = 3 - Spatial + i;
    s.in[d] = inSizes[i];
    s.kernel[d] = kernelSizes[i];
    s.out[d] = outSizes[i];
    s.stride[d] = strides[i];
    s.dilation[d] = dilations[i];
  }
  return s;
}

/// One input channel per filter over 2-d or 1-d images: a depthwise
/// convolution's group.
bool isDepthwise(const ConvShape &s) { return s.channels == 1 && s.in[0] == 1; }

/// One output row of a depthwise filter with a KH x KW kernel, unit
/// dilation and a horizontal stride of SW: every tap summed in registers,
/// the row written once. Sizes known at compile time let the compiler
/// unroll the taps and vectorize along the row.
template <int KH, int KW, int SW>
[[gnu::always_inline]] inline void
convolveDepthwiseRow(const float *__restrict image, int64_t width,
                     const float *__restrict filter, float *__restrict out,
                     int64_t outW) {
  for (int64_t ow = 0; ow < outW; ++ow) {
    float sum = out[ow];
    for (int kh = 0; kh < KH; ++kh)
      for (int kw = 0; kw < KW; ++kw)
        sum += filter[kh * KW + kw] * image[kh * width + ow * SW + kw];
    out[ow] = sum;
  }
}

// The rows of the common depthwise kernels, each compiled for AVX-512,
// AVX2 and the baseline and chosen when the library loads (clang clones
// no templates, hence a function per kernel).
#define VRAM_DEPTHWISE_ROW(NAME, K, S)                                         \
  [[gnu::target_clones("avx512f", "avx2", "default")]] void NAME(              \
      const float *image, int64_t width, const float *filter, float *out,      \
      int64_t outW) {                                                          \
    convolveDepthwiseRow<K, K, S>(image, width, filter, out, outW);            \
  }
VRAM_DEPTHWISE_ROW(convolveDepthwiseRow3x3Stride1, 3, 1)
VRAM_DEPTHWISE_ROW(convolveDepthwiseRow3x3Stride2, 3, 2)
VRAM_DEPTHWISE_ROW(convolveDepthwiseRow5x5Stride1, 5, 1)
VRAM_DEPTHWISE_ROW(convolveDepthwiseRow5x5Stride2, 5, 2)
#undef VRAM_DEPTHWISE_ROW

using DepthwiseRow = void (*)(const float *, int64_t, const float *, float *,
                              int64_t);

/// The specialised row of the common depthwise kernels (3x3 and 5x5,
/// stride 1 or 2, no dilation), or null.
DepthwiseRow getDepthwiseRow(const ConvShape &s) {
  if (s.dilation[1] != 1 || s.dilation[2] != 1 || s.kernel[1] != s.kernel[2])
    return nullptr;
  int64_t stride = s.stride[2];
  switch (s.kernel[1] * 10 + stride) {
  case 31:
    return convolveDepthwiseRow3x3Stride1;
  case 32:
    return convolveDepthwiseRow3x3Stride2;
  case 51:
    return convolveDepthwiseRow5x5Stride1;
  case 52:
    return convolveDepthwiseRow5x5Stride2;
  default:
    return nullptr;
  }
}

/// A depthwise filter (one input channel) over one 2-d or 1-d image.
void convolveDepthwise(const float *image, const float *filter, float *output,
                       const ConvShape &s) {
  int64_t kernelH = s.kernel[1], kernelW = s.kernel[2];
  int64_t outH = s.out[1], outW = s.out[2], width = s.in[2];
  int64_t columns = outH * outW;
  DepthwiseRow row = getDepthwiseRow(s);
  for (int64_t f = 0; f < s.features; ++f) {
    const float *taps = filter + f * kernelH * kernelW;
    for (int64_t oh = 0; oh < outH; ++oh) {
      float *out = output + f * columns + oh * outW;
      const float *rows = image + oh * s.stride[1] * width;
      if (row) {
        row(rows, width, taps, out, outW);
        continue;
      }
      // Every tap into the output row while the row is in cache.
      for (int64_t kh = 0; kh < kernelH; ++kh)
        for (int64_t kw = 0; kw < kernelW; ++kw) {
          float weight = taps[kh * kernelW + kw];
          const float *in =
              rows + kh * s.dilation[1] * width + kw * s.dilation[2];
          for (int64_t ow = 0; ow < outW; ++ow)
            out[ow] += weight * in[ow * s.stride[2]];
        }
    }
  }
}

/// output[f, o] += sum over c and k of
///   image[c, o * stride + k * dilation] * filter[f, c, k]
/// for one image (already padded), o and k ranging over the spatial dims.
/// One input channel in a 2-d or 1-d convolution (a depthwise
/// convolution's group) is a direct loop per filter tap, along the output
/// rows; otherwise the filter as an F x (C KD KH KW) matrix times the image
/// unfolded into (C KD KH KW) x (OD OH OW) columns (im2col) in `unfolded`,
/// which a 1x1x1 filter with unit strides does not need.
void convolveImage(const float *image, const float *filter, float *output,
                   const ConvShape &s, std::vector<float> &unfolded) {
  int64_t columns = s.out[0] * s.out[1] * s.out[2];
  if (isDepthwise(s))
    return convolveDepthwise(image, filter, output, s);
  int64_t taps = s.kernel[0] * s.kernel[1] * s.kernel[2];
  int64_t rows = s.channels * taps;
  bool pointwise =
      taps == 1 && s.stride[0] == 1 && s.stride[1] == 1 && s.stride[2] == 1;
  if (!pointwise) {
    unfolded.resize(rows * columns);
    int64_t plane = s.in[1] * s.in[2];
    // One channel's taps x positions; the channels on threads of their own
    // when this image is the only work (a batch of one).
    auto unfoldChannel = [&](int64_t c) {
      float *column = unfolded.data() + c * taps * columns;
      for (int64_t kd = 0; kd < s.kernel[0]; ++kd)
        for (int64_t kh = 0; kh < s.kernel[1]; ++kh)
          for (int64_t kw = 0; kw < s.kernel[2]; ++kw)
            for (int64_t od = 0; od < s.out[0]; ++od)
              for (int64_t oh = 0; oh < s.out[1]; ++oh) {
                const float *row =
                    image + c * s.in[0] * plane +
                    (od * s.stride[0] + kd * s.dilation[0]) * plane +
                    (oh * s.stride[1] + kh * s.dilation[1]) * s.in[2] +
                    kw * s.dilation[2];
                for (int64_t ow = 0; ow < s.out[2]; ++ow)
                  *column++ = row[ow * s.stride[2]];
              }
    };
#pragma omp parallel for schedule(static) if (sharesPass(rows * columns))
    for (int64_t c = 0; c < s.channels; ++c)
      unfoldChannel(c);
    image = unfolded.data();
  }
  accumulateProduct(filter, image, output, s.features, columns, rows);
}

/// The im2col columns of the last convolution on this thread, kept for the
/// next: VGG-16's second layer unfolds 115 MB per image, and a buffer that
/// large, allocated and freed per call, is mapped and faulted in afresh each
/// time (21% of VGG-16's run time at batch 1).
std::vector<float> &unfoldScratch() {
  static thread_local std::vector<float> unfolded;
  return unfolded;
}

/// Sets each of one image's F output rows to its feature's bias: the
/// features on threads of their own when this image is the only work.
void writeBias(const float *bias, float *output, const ConvShape &s) {
  int64_t columns = s.out[0] * s.out[1] * s.out[2];
#pragma omp parallel for schedule(static) if (sharesPass(s.outputSize()))
  for (int64_t f = 0; f < s.features; ++f)
    std::fill_n(output + f * columns, columns, bias[f]);
}

/// Convolves `images` consecutive images into consecutive outputs, image i
/// with the filters of group i % `groups` (consecutive too); with a `bias`
/// (groups x F values), each output is set to its group's bias first
/// instead of accumulated into. The images are spread over the threads when
/// there are enough of them to go round; otherwise each image's product is.
void convolveImages(const float *input, const float *filter, float *output,
                    const ConvShape &s, int64_t images, int64_t groups = 1,
                    const float *bias = nullptr) {
  auto convolve = [&](int64_t i) {
    float *out = output + i * s.outputSize();
    if (bias)
      writeBias(bias + i % groups * s.features, out, s);
    convolveImage(input + i * s.imageSize(),
                  filter + i % groups * s.filterSize(), out, s,
                  unfoldScratch());
  };
  if (images >= getThreads()) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < images; ++i)
      convolve(i);
    return;
  }
  for (int64_t i = 0; i < images; ++i)
    convolve(i);
}

/// A convolution over a batch: input N x C x <Spatial>, filter
/// F x C x <kernel>, output N x F x <out>, one image at a time; with a
/// bias of F values, the output is set to it first.
template <int Spatial>
void convolveBatch(MemRef<Spatial + 2> *input, MemRef<Spatial + 2> *filter,
                   MemRef<Spatial + 2> *output, const int64_t *strides,
                   const int64_t *dilations, MemRef<1> *bias = nullptr) {
  convolveImages(input->data(), filter->data(), output->data(),
                 makeConvShape<Spatial>(input->sizes[1], filter->sizes[0],
                                        input->sizes + 2, filter->sizes + 2,
                                        output->sizes + 2, strides, dilations),
                 input->sizes[0], /*groups=*/1, bias ? bias->data() : nullptr);
}

/// linalg.conv_2d_ngchw_gfchw: input N x G x C x H x W, filter
/// G x F x C x KH x KW, output N x G x F x OH x OW, one image of one group
/// at a time; with a bias of G x F values, the output is set to it first.
void convolveGroups(MemRef<5> *input, MemRef<5> *filter, MemRef<5> *output,
                    int64_t strideH, int64_t strideW, int64_t dilationH,
                    int64_t dilationW, MemRef<1> *bias = nullptr) {
  int64_t groups = input->sizes[1];
  int64_t strides[] = {strideH, strideW}, dilations[] = {dilationH, dilationW};
  convolveImages(input->data(), filter->data(), output->data(),
                 makeConvShape<2>(input->sizes[2], filter->sizes[1],
                                  input->sizes + 3, filter->sizes + 3,
                                  output->sizes + 3, strides, dilations),
                 input->sizes[0] * groups, groups,
                 bias ? bias->data() : nullptr);
}

} // namespace

extern "C" {

/// linalg.matmul, with A stored K x M where `transA` and B stored N x K
/// where `transB` (a Gemm's flags, or a weight gradient's A^T dY).
void _mlir_ciface_vram_matmul_f32(MemRef<2> *a, MemRef<2> *b, MemRef<2> *c,
                                  int64_t transA, int64_t transB) {
  accumulateProduct(a->data(), b->data(), c->data(), c->sizes[0], c->sizes[1],
                    transA ? a->sizes[0] : a->sizes[1], transA, transB);
}

void _mlir_ciface_vram_batch_matmul_f32(MemRef<3> *a, MemRef<3> *b,
                                        MemRef<3> *c) {
  int64_t m = a->sizes[1], k = a->sizes[2], n = b->sizes[2];
  int64_t batches = a->sizes[0];
  // Products of a batch on threads of their own when they go round.
#pragma omp parallel for schedule(static) if (batches >= getThreads())
  for (int64_t batch = 0; batch < batches; ++batch)
    accumulateProduct(a->data() + batch * m * k, b->data() + batch * k * n,
                      c->data() + batch * m * n, m, n, k);
}

/// linalg.conv_1d_ncw_fcw: input N x C x W, filter F x C x KW.
void _mlir_ciface_vram_conv1d_ncw_fcw_f32(MemRef<3> *input, MemRef<3> *filter,
                                          MemRef<3> *output, int64_t stride,
                                          int64_t dilation) {
  convolveBatch<1>(input, filter, output, &stride, &dilation);
}

void _mlir_ciface_vram_conv1d_ncw_fcw_bias_f32(MemRef<3> *input,
                                               MemRef<3> *filter,
                                               MemRef<3> *output,
                                               MemRef<1> *bias, int64_t stride,
                                               int64_t dilation) {
  convolveBatch<1>(input, filter, output, &stride, &dilation, bias);
}

/// linalg.conv_2d_nchw_fchw: input N x C x H x W, filter F x C x KH x KW.
void _mlir_ciface_vram_conv2d_nchw_fchw_f32(MemRef<4> *input, MemRef<4> *filter,
                                            MemRef<4> *output, int64_t strideH,
                                            int64_t strideW, int64_t dilationH,
                                            int64_t dilationW) {
  int64_t strides[] = {strideH, strideW}, dilations[] = {dilationH, dilationW};
  convolveBatch<2>(input, filter, output, strides, dilations);
}

void _mlir_ciface_vram_conv2d_nchw_fchw_bias_f32(
    MemRef<4> *input, MemRef<4> *filter, MemRef<4> *output, MemRef<1> *bias,
    int64_t strideH, int64_t strideW, int64_t dilationH, int64_t dilationW) {
  int64_t strides[] = {strideH, strideW}, dilations[] = {dilationH, dilationW};
  convolveBatch<2>(input, filter, output, strides, dilations, bias);
}

/// linalg.conv_3d_ncdhw_fcdhw: input N x C x D x H x W, filter
/// F x C x KD x KH x KW.
void _mlir_ciface_vram_conv3d_ncdhw_fcdhw_f32(
    MemRef<5> *input, MemRef<5> *filter, MemRef<5> *output, int64_t strideD,
    int64_t strideH, int64_t strideW, int64_t dilationD, int64_t dilationH,
    int64_t dilationW) {
  int64_t strides[] = {strideD, strideH, strideW},
          dilations[] = {dilationD, dilationH, dilationW};
  convolveBatch<3>(input, filter, output, strides, dilations);
}

void _mlir_ciface_vram_conv3d_ncdhw_fcdhw_bias_f32(
    MemRef<5> *input, MemRef<5> *filter, MemRef<5> *output, MemRef<1> *bias,
    int64_t strideD, int64_t strideH, int64_t strideW, int64_t dilationD,
    int64_t dilationH, int64_t dilationW) {
  int64_t strides[] = {strideD, strideH, strideW},
          dilations[] = {dilationD, dilationH, dilationW};
  convolveBatch<3>(input, filter, output, strides, dilations, bias);
}

/// linalg.conv_2d_ngchw_gfchw, a grouped convolution (a depthwise one has
/// C = 1).
void _mlir_ciface_vram_conv2d_ngchw_gfchw_f32(
    MemRef<5> *input, MemRef<5> *filter, MemRef<5> *output, int64_t strideH,
    int64_t strideW, int64_t dilationH, int64_t dilationW) {
  convolveGroups(input, filter, output, strideH, strideW, dilationH, dilationW);
}

void _mlir_ciface_vram_conv2d_ngchw_gfchw_bias_f32(
    MemRef<5> *input, MemRef<5> *filter, MemRef<5> *output, MemRef<1> *bias,
    int64_t strideH, int64_t strideW, int64_t dilationH, int64_t dilationW) {
  convolveGroups(input, filter, output, strideH, strideW, dilationH, dilationW,
                 bias);
}

} // extern "C"
