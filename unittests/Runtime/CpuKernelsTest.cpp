//===- CpuKernelsTest.cpp - the CPU kernels against direct loops ----------===//
//
// The grouped convolution kernel has paths of its own for depthwise filters
// (rows specialised by kernel size and stride, a generic loop for the rest,
// images spread over threads) and for dense ones (im2col and GEMM), and a
// large product is split among threads by columns or by rows; each is
// compared with the op's definition, summed in double.
//
//===----------------------------------------------------------------------===//

#include "VramCpuKernels.h"

#include "gtest/gtest.h"

#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

using vram::cpu::MemRef;

namespace {

/// A row-major tensor and its descriptor.
template <int Rank> struct Tensor {
  std::vector<float> values;
  MemRef<Rank> descriptor;

  explicit Tensor(const int64_t (&sizes)[Rank], std::mt19937 &random) {
    int64_t count = 1;
    for (int i = Rank - 1; i >= 0; --i) {
      descriptor.sizes[i] = sizes[i];
      descriptor.strides[i] = count;
      count *= sizes[i];
    }
    std::uniform_real_distribution<float> uniform(-1, 1);
    values.resize(count);
    for (float &value : values)
      value = uniform(random);
    descriptor.allocated = descriptor.aligned = values.data();
    descriptor.offset = 0;
  }
};

/// Four OpenMP threads while in scope, whatever the machine has, so that
/// the kernels' paths for several threads run everywhere.
struct FourThreads {
  int previous = omp_get_max_threads();
  FourThreads() { omp_set_num_threads(4); }
  ~FourThreads() { omp_set_num_threads(previous); }
};

struct GroupedConv {
  int64_t batch, groups, channels, features, height, width, kernelH, kernelW,
      stride, dilation;
};

/// Runs linalg.conv_2d_ngchw_gfchw's kernel on random data (the output
/// starting random too: the kernel accumulates; with `withBias`, its
/// `_bias` variant, which starts from a random bias per group and feature
/// instead) on four threads and checks every output element against the
/// definition.
void checkGroupedConv(const GroupedConv &c, bool withBias = false) {
  std::mt19937 random(7);
  int64_t outH = (c.height - c.dilation * (c.kernelH - 1) - 1) / c.stride + 1;
  int64_t outW = (c.width - c.dilation * (c.kernelW - 1) - 1) / c.stride + 1;
  Tensor<5> input({c.batch, c.groups, c.channels, c.height, c.width}, random);
  Tensor<5> filter({c.groups, c.features, c.channels, c.kernelH, c.kernelW},
                   random);
  Tensor<5> output({c.batch, c.groups, c.features, outH, outW}, random);
  Tensor<1> bias({c.groups * c.features}, random);
  std::vector<float> initial = output.values;
  {
    FourThreads threads;
    if (withBias)
      _mlir_ciface_vram_conv2d_ngchw_gfchw_bias_f32(
          &input.descriptor, &filter.descriptor, &output.descriptor,
          &bias.descriptor, c.stride, c.stride, c.dilation, c.dilation);
    else
      _mlir_ciface_vram_conv2d_ngchw_gfchw_f32(
          &input.descriptor, &filter.descriptor, &output.descriptor, c.stride,
          c.stride, c.dilation, c.dilation);
  }

  int64_t index = 0;
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t g = 0; g < c.groups; ++g)
      for (int64_t f = 0; f < c.features; ++f)
        for (int64_t oh = 0; oh < outH; ++oh)
          for (int64_t ow = 0; ow < outW; ++ow, ++index) {
            double expected =
                withBias ? bias.values[g * c.features + f] : initial[index];
            for (int64_t ch = 0; ch < c.channels; ++ch)
              for (int64_t kh = 0; kh < c.kernelH; ++kh)
                for (int64_t kw = 0; kw < c.kernelW; ++kw) {
                  int64_t h = oh * c.stride + kh * c.dilation;
                  int64_t w = ow * c.stride + kw * c.dilation;
                  expected +=
                      double(
                          input.values[(((n * c.groups + g) * c.channels + ch) *
                                            c.height +
                                        h) *
                                           c.width +
                                       w]) *
                      filter.values[(((g * c.features + f) * c.channels + ch) *
                                         c.kernelH +
                                     kh) *
                                        c.kernelW +
                                    kw];
                }
            ASSERT_NEAR(output.values[index], expected, 1e-5)
                << "at n " << n << ", group " << g << ", feature " << f << ", ("
                << oh << ", " << ow << ")";
          }
}

TEST(CpuKernelsTest, DepthwiseSpecialisedRows) {
  // 3x3 and 5x5, stride 1 and 2: the rows compiled for them; odd sizes so
  // the last window of a stride-2 row ends short of the image's edge.
  for (int64_t kernel : {3, 5})
    for (int64_t stride : {1, 2})
      checkGroupedConv({/*batch=*/2, /*groups=*/5, /*channels=*/1,
                        /*features=*/1, /*height=*/13, /*width=*/17, kernel,
                        kernel, stride, /*dilation=*/1});
  // A channel multiplier of 2: two filters per input channel.
  checkGroupedConv({1, 4, 1, 2, 9, 9, 3, 3, 1, 1});
}

TEST(CpuKernelsTest, DepthwiseGenericLoop) {
  // Dilation and a non-square kernel take the loop over taps.
  checkGroupedConv({2, 3, 1, 1, 11, 12, 3, 3, 1, /*dilation=*/2});
  checkGroupedConv({2, 3, 1, 1, 11, 12, 3, 1, 2, 1});
}

TEST(CpuKernelsTest, GroupedAndDenseThroughGemm) {
  checkGroupedConv({2, 2, 3, 4, 9, 10, 3, 3, 2, 1});
  checkGroupedConv({2, 1, 6, 5, 8, 8, 1, 1, 1, 1});
  // One image: its im2col matrix (16 channels x 9 taps x 30 x 30
  // positions = 129,600 elements, over 2^16) unfolded by channels on the
  // threads.
  checkGroupedConv({1, 1, 16, 8, 32, 32, 3, 3, 1, 1});
}

TEST(CpuKernelsTest, BiasInsteadOfAccumulating) {
  // Depthwise (images x groups spread over the threads), dense grouped,
  // and one large image whose bias rows are written on the threads (80
  // features x 30 x 30 positions = 72,000 values, over 2^16).
  checkGroupedConv({2, 5, 1, 1, 13, 17, 3, 3, 1, 1}, /*withBias=*/true);
  checkGroupedConv({2, 2, 3, 4, 9, 10, 3, 3, 2, 1}, /*withBias=*/true);
  checkGroupedConv({1, 1, 16, 80, 32, 32, 3, 3, 1, 1}, /*withBias=*/true);
}

/// Runs linalg.matmul's kernel on random m x k and k x n operands (stored
/// transposed where asked) and a random C, with four threads whatever the
/// machine has, and checks C += op(A) op(B) element by element.
void checkMatmul(int64_t m, int64_t n, int64_t k, bool transA, bool transB) {
  std::mt19937 random(11);
  int64_t aSizes[2] = {transA ? k : m, transA ? m : k};
  int64_t bSizes[2] = {transB ? n : k, transB ? k : n};
  Tensor<2> a(aSizes, random), b(bSizes, random);
  Tensor<2> c({m, n}, random);
  std::vector<float> initial = c.values;
  {
    FourThreads threads;
    _mlir_ciface_vram_matmul_f32(&a.descriptor, &b.descriptor, &c.descriptor,
                                 transA, transB);
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double expected = initial[i * n + j];
      for (int64_t p = 0; p < k; ++p)
        expected += double(a.values[transA ? p * m + i : i * k + p]) *
                    b.values[transB ? j * k + p : p * n + j];
      ASSERT_NEAR(c.values[i * n + j], expected, 1e-3)
          << "at (" << i << ", " << j << ")";
    }
}

TEST(CpuKernelsTest, ProductsSplitAmongThreads) {
  // Over 2^21 multiply-adds: 128 x 160 x 160 = 3,276,800 by columns (160
  // columns, four blocks of 48, the last 16), transposes included; a
  // convolution's 7 x 7 positions (49 columns, too few for four threads)
  // by rows: 960 rows in blocks of 240.
  for (bool transA : {false, true})
    for (bool transB : {false, true})
      checkMatmul(128, 160, 160, transA, transB);
  checkMatmul(960, 49, 160, false, false);
  checkMatmul(960, 49, 160, true, true);
  // Below 2^21 (one thread).
  checkMatmul(31, 17, 13, true, false);
}

} // namespace
