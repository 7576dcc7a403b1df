//===- VramCpuKernels.cpp - Heavy CPU ops through BLAS --------------------===//
//
// The functions vram-call-cpu-kernels puts in place of f32 linalg.matmul,
// linalg.batch_matmul and linalg.conv_2d_nchw_fchw on the CPU path, on
// CBLAS (OpenBLAS from Debian). They take memref descriptors as MLIR's C
// interface passes them (`_mlir_ciface_<name>`, a pointer per memref) and,
// like the linalg ops they replace, accumulate into the output. The pass
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

/// C[m x n] += A[m x k] B[k x n], row-major.
void accumulateProduct(const float *a, const float *b, float *c, int64_t m,
                       int64_t n, int64_t k) {
  if (m == 0 || n == 0)
    return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b,
              n, 1.0f, c, n);
}

} // namespace

extern "C" {

void _mlir_ciface_vram_matmul_f32(MemRef<2> *a, MemRef<2> *b, MemRef<2> *c) {
  accumulateProduct(a->data(), b->data(), c->data(), a->sizes[0], b->sizes[1],
                    a->sizes[1]);
}

void _mlir_ciface_vram_batch_matmul_f32(MemRef<3> *a, MemRef<3> *b,
                                        MemRef<3> *c) {
  int64_t m = a->sizes[1], k = a->sizes[2], n = b->sizes[2];
  for (int64_t batch = 0; batch < a->sizes[0]; ++batch)
    accumulateProduct(a->data() + batch * m * k, b->data() + batch * k * n,
                      c->data() + batch * m * n, m, n, k);
}

/// output[n, f, oh, ow] += sum over c, kh, kw of
///   input[n, c, oh * sh + kh * dh, ow * sw + kw * dw] * filter[f, c, kh, kw]
/// (the input is already padded): per image, the filter as an
/// F x (C KH KW) matrix times the input unfolded into (C KH KW) x (OH OW)
/// columns (im2col). A 1x1 filter with unit strides reads the image as is.
void _mlir_ciface_vram_conv2d_nchw_fchw_f32(MemRef<4> *input, MemRef<4> *filter,
                                            MemRef<4> *output, int64_t strideH,
                                            int64_t strideW, int64_t dilationH,
                                            int64_t dilationW) {
  int64_t batch = input->sizes[0], channels = input->sizes[1];
  int64_t height = input->sizes[2], width = input->sizes[3];
  int64_t features = filter->sizes[0];
  int64_t kernelH = filter->sizes[2], kernelW = filter->sizes[3];
  int64_t outH = output->sizes[2], outW = output->sizes[3];
  int64_t rows = channels * kernelH * kernelW, columns = outH * outW;
  bool direct = kernelH == 1 && kernelW == 1 && strideH == 1 && strideW == 1;
  std::vector<float> unfolded(direct ? 0 : rows * columns);
  for (int64_t n = 0; n < batch; ++n) {
    const float *image = input->data() + n * channels * height * width;
    if (!direct) {
      float *column = unfolded.data();
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t kh = 0; kh < kernelH; ++kh)
          for (int64_t kw = 0; kw < kernelW; ++kw)
            for (int64_t oh = 0; oh < outH; ++oh) {
              const float *row = image + c * height * width +
                                 (oh * strideH + kh * dilationH) * width +
                                 kw * dilationW;
              for (int64_t ow = 0; ow < outW; ++ow)
                *column++ = row[ow * strideW];
            }
      image = unfolded.data();
    }
    accumulateProduct(filter->data(), image,
                      output->data() + n * features * columns, features,
                      columns, rows);
  }
}

} // extern "C"
