//===- VramCpuKernels.cpp - Heavy CPU ops through BLAS --------------------===//
//
// The functions vram-call-cpu-kernels puts in place of f32 linalg.matmul
// (transposed operands included), linalg.batch_matmul,
// linalg.conv_2d_nchw_fchw and (grouped) linalg.conv_2d_ngchw_gfchw on the
// CPU path, on CBLAS (OpenBLAS from Debian). They take memref descriptors as
// MLIR's C interface passes them (`_mlir_ciface_<name>`, a pointer per memref)
// and, like the linalg ops they replace, accumulate into the output. The pass
// only calls them on contiguous row-major memrefs (the identity layout), so
// sizes are all they read of the strides.
//
//===----------------------------------------------------------------------===//

#include <cblas.h>

#include <cstdint>
#include <vector>

namespace {

/// A ranked memref descriptor, as MLIR's LLVM lowering lays it out.
template <int Rank> struct MemRef {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[Rank];
  int64_t strides[Rank];

  float *data() const { return aligned + offset; }
};

/// C[m x n] += op(A) op(B), row-major, where op(A) = A[m x k], or A^T with A
/// stored k x m where `transA`, and op(B) = B[k x n], or B^T with B stored
/// n x k where `transB`.
void accumulateProduct(const float *a, const float *b, float *c, int64_t m,
                       int64_t n, int64_t k, bool transA = false,
                       bool transB = false) {
  if (m == 0 || n == 0)
    return;
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a,
              transA ? m : k, b, transB ? k : n, 1.0f, c, n);
}

/// The sizes and steps of one 2-d convolution: an image of C channels,
/// H x W, convolved with F filters of C x KH x KW into F x OH x OW.
struct ConvShape {
  int64_t channels, height, width;
  int64_t features, kernelH, kernelW;
  int64_t outH, outW;
  int64_t strideH, strideW, dilationH, dilationW;
};

/// output[f, oh, ow] += sum over c, kh, kw of
///   image[c, oh * sh + kh * dh, ow * sw + kw * dw] * filter[f, c, kh, kw]
/// for one image (already padded). One input channel (a depthwise
/// convolution's group) is a direct loop per filter tap, along the output
/// rows; otherwise the filter as an F x (C KH KW) matrix times the image
/// unfolded into (C KH KW) x (OH OW) columns (im2col) in `unfolded`, which a
/// 1x1 filter with unit strides does not need.
void convolveImage(const float *image, const float *filter, float *output,
                   const ConvShape &s, std::vector<float> &unfolded) {
  int64_t columns = s.outH * s.outW;
  if (s.channels == 1) {
    // Every tap of a filter into one output row while the row is in cache
    // (tap by tap over the whole plane read and wrote it once per tap).
    for (int64_t f = 0; f < s.features; ++f)
      for (int64_t oh = 0; oh < s.outH; ++oh) {
        float *out = output + f * columns + oh * s.outW;
        for (int64_t kh = 0; kh < s.kernelH; ++kh)
          for (int64_t kw = 0; kw < s.kernelW; ++kw) {
            float weight = filter[(f * s.kernelH + kh) * s.kernelW + kw];
            const float *in = image +
                              (oh * s.strideH + kh * s.dilationH) * s.width +
                              kw * s.dilationW;
            if (s.strideW == 1)
              for (int64_t ow = 0; ow < s.outW; ++ow)
                out[ow] += weight * in[ow];
            else
              for (int64_t ow = 0; ow < s.outW; ++ow)
                out[ow] += weight * in[ow * s.strideW];
          }
      }
    return;
  }
  int64_t rows = s.channels * s.kernelH * s.kernelW;
  if (s.kernelH != 1 || s.kernelW != 1 || s.strideH != 1 || s.strideW != 1) {
    unfolded.resize(rows * columns);
    float *column = unfolded.data();
    for (int64_t c = 0; c < s.channels; ++c)
      for (int64_t kh = 0; kh < s.kernelH; ++kh)
        for (int64_t kw = 0; kw < s.kernelW; ++kw)
          for (int64_t oh = 0; oh < s.outH; ++oh) {
            const float *row = image + c * s.height * s.width +
                               (oh * s.strideH + kh * s.dilationH) * s.width +
                               kw * s.dilationW;
            for (int64_t ow = 0; ow < s.outW; ++ow)
              *column++ = row[ow * s.strideW];
          }
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
  for (int64_t batch = 0; batch < a->sizes[0]; ++batch)
    accumulateProduct(a->data() + batch * m * k, b->data() + batch * k * n,
                      c->data() + batch * m * n, m, n, k);
}

/// linalg.conv_2d_nchw_fchw: input N x C x H x W, filter F x C x KH x KW,
/// output N x F x OH x OW, one image at a time.
void _mlir_ciface_vram_conv2d_nchw_fchw_f32(MemRef<4> *input, MemRef<4> *filter,
                                            MemRef<4> *output, int64_t strideH,
                                            int64_t strideW, int64_t dilationH,
                                            int64_t dilationW) {
  ConvShape s{input->sizes[1],  input->sizes[2],  input->sizes[3],
              filter->sizes[0], filter->sizes[2], filter->sizes[3],
              output->sizes[2], output->sizes[3], strideH,
              strideW,          dilationH,        dilationW};
  std::vector<float> &unfolded = unfoldScratch();
  for (int64_t n = 0; n < input->sizes[0]; ++n)
    convolveImage(
        input->data() + n * s.channels * s.height * s.width, filter->data(),
        output->data() + n * s.features * s.outH * s.outW, s, unfolded);
}

/// linalg.conv_2d_ngchw_gfchw, a grouped convolution: input
/// N x G x C x H x W, filter G x F x C x KH x KW, output N x G x F x OH x OW,
/// one image of one group at a time (a depthwise convolution has C = 1).
void _mlir_ciface_vram_conv2d_ngchw_gfchw_f32(
    MemRef<5> *input, MemRef<5> *filter, MemRef<5> *output, int64_t strideH,
    int64_t strideW, int64_t dilationH, int64_t dilationW) {
  int64_t groups = input->sizes[1];
  ConvShape s{input->sizes[2],  input->sizes[3],  input->sizes[4],
              filter->sizes[1], filter->sizes[3], filter->sizes[4],
              output->sizes[3], output->sizes[4], strideH,
              strideW,          dilationH,        dilationW};
  int64_t imageSize = s.channels * s.height * s.width;
  int64_t filterSize = s.features * s.channels * s.kernelH * s.kernelW;
  int64_t outputSize = s.features * s.outH * s.outW;
  std::vector<float> &unfolded = unfoldScratch();
  for (int64_t n = 0; n < input->sizes[0]; ++n)
    for (int64_t g = 0; g < groups; ++g)
      convolveImage(input->data() + (n * groups + g) * imageSize,
                    filter->data() + g * filterSize,
                    output->data() + (n * groups + g) * outputSize, s,
                    unfolded);
}

} // extern "C"
