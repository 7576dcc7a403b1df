//===- VramCpuKernels.h - the CPU kernels' C interface ----------*- C++ -*-===//
//
// The functions vram-call-library-kernels calls (VramCpuKernels.cpp), as MLIR's
// C interface passes memrefs: a pointer to each descriptor.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_RUNTIME_VRAMCPUKERNELS_H
#define VRAM_RUNTIME_VRAMCPUKERNELS_H

#include "MemRef.h"

#include <cstdint>

namespace vram::cpu {
/// A ranked f32 memref descriptor.
template <int Rank> using MemRef = vram::runtime::MemRef<float, Rank>;
} // namespace vram::cpu

extern "C" {
void _mlir_ciface_vram_matmul_f32(vram::cpu::MemRef<2> *a,
                                  vram::cpu::MemRef<2> *b,
                                  vram::cpu::MemRef<2> *c, int64_t transA,
                                  int64_t transB);
void _mlir_ciface_vram_batch_matmul_f32(vram::cpu::MemRef<3> *a,
                                        vram::cpu::MemRef<3> *b,
                                        vram::cpu::MemRef<3> *c);
void _mlir_ciface_vram_conv1d_ncw_fcw_f32(vram::cpu::MemRef<3> *input,
                                          vram::cpu::MemRef<3> *filter,
                                          vram::cpu::MemRef<3> *output,
                                          int64_t stride, int64_t dilation);
void _mlir_ciface_vram_conv2d_nchw_fchw_f32(vram::cpu::MemRef<4> *input,
                                            vram::cpu::MemRef<4> *filter,
                                            vram::cpu::MemRef<4> *output,
                                            int64_t strideH, int64_t strideW,
                                            int64_t dilationH,
                                            int64_t dilationW);
void _mlir_ciface_vram_conv3d_ncdhw_fcdhw_f32(
    vram::cpu::MemRef<5> *input, vram::cpu::MemRef<5> *filter,
    vram::cpu::MemRef<5> *output, int64_t strideD, int64_t strideH,
    int64_t strideW, int64_t dilationD, int64_t dilationH, int64_t dilationW);
void _mlir_ciface_vram_conv2d_ngchw_gfchw_f32(vram::cpu::MemRef<5> *input,
                                              vram::cpu::MemRef<5> *filter,
                                              vram::cpu::MemRef<5> *output,
                                              int64_t strideH, int64_t strideW,
                                              int64_t dilationH,
                                              int64_t dilationW);
// The convolutions with the output set to a bias per feature (groups x
// features for the grouped one) before they accumulate.
void _mlir_ciface_vram_conv1d_ncw_fcw_bias_f32(vram::cpu::MemRef<3> *input,
                                               vram::cpu::MemRef<3> *filter,
                                               vram::cpu::MemRef<3> *output,
                                               vram::cpu::MemRef<1> *bias,
                                               int64_t stride,
                                               int64_t dilation);
void _mlir_ciface_vram_conv2d_nchw_fchw_bias_f32(
    vram::cpu::MemRef<4> *input, vram::cpu::MemRef<4> *filter,
    vram::cpu::MemRef<4> *output, vram::cpu::MemRef<1> *bias, int64_t strideH,
    int64_t strideW, int64_t dilationH, int64_t dilationW);
void _mlir_ciface_vram_conv3d_ncdhw_fcdhw_bias_f32(
    vram::cpu::MemRef<5> *input, vram::cpu::MemRef<5> *filter,
    vram::cpu::MemRef<5> *output, vram::cpu::MemRef<1> *bias, int64_t strideD,
    int64_t strideH, int64_t strideW, int64_t dilationD, int64_t dilationH,
    int64_t dilationW);
void _mlir_ciface_vram_conv2d_ngchw_gfchw_bias_f32(
    vram::cpu::MemRef<5> *input, vram::cpu::MemRef<5> *filter,
    vram::cpu::MemRef<5> *output, vram::cpu::MemRef<1> *bias, int64_t strideH,
    int64_t strideW, int64_t dilationH, int64_t dilationW);
}

#endif // VRAM_RUNTIME_VRAMCPUKERNELS_H
