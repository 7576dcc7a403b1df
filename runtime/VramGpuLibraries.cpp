//===- VramGpuLibraries.cpp - heavy ops through cuBLAS and cuDNN ----------===//
//
// The functions `vram-call-library-kernels{target=gpu}` puts in place of f32
// linalg.matmul (transposed operands included), linalg.batch_matmul, the
// 1-d, 2-d and 3-d convolutions and the grouped 2-d one in the GPU
// pipeline's host code. The buffers are device memory (the static arena's);
// only their descriptors live on the host. Like the linalg ops they
// replace, the calls accumulate into the output (beta = 1).
//
// Ordering: the host code waits for the compute stream before any call it
// cannot see into (upstream gpu-async-region), so the inputs are ready when
// a function here starts; each queues its work on a stream of its own and
// waits for it before returning, so the next kernel reads finished outputs.
//
// Arithmetic is FP32 (cuBLAS's default math mode; cuDNN's FMA math type):
// TF32 tensor cores would round the inputs to 10 mantissa bits, beyond the
// 1e-3 the GPU check compares against the CPU with. cuBLAS gets no
// workspace, and cuDNN the buffer the pass allocated in the arena: every
// byte the library touches is in the plan.
//
// Errors are fatal with a message naming the call, as in the driver runtime:
// the generated host code has no error path.
//
//===----------------------------------------------------------------------===//

#include "MemRef.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace {

template <int Rank> using MemRef = vram::runtime::MemRef<float, Rank>;
using Workspace = vram::runtime::MemRef<char, 1>;

[[noreturn]] void fail(const char *call, const char *error) {
  std::fprintf(stderr, "vram_gpu_libraries: %s failed: %s\n", call, error);
  std::abort();
}
void check(cudaError_t result, const char *call) {
  if (result != cudaSuccess)
    fail(call, cudaGetErrorString(result));
}
void check(cublasStatus_t result, const char *call) {
  if (result != CUBLAS_STATUS_SUCCESS)
    fail(call, cublasGetStatusString(result));
}
void check(cudnnStatus_t result, const char *call) {
  if (result != CUDNN_STATUS_SUCCESS)
    fail(call, cudnnGetErrorString(result));
}
#define CHECK(call) check((call), #call)

/// The libraries' handles and the stream their work goes on, per host
/// thread (neither handle may be shared between threads running at once).
struct Libraries {
  cudaStream_t stream;
  cublasHandle_t blas;
  cudnnHandle_t dnn;

  Libraries() {
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHECK(cublasCreate(&blas));
    CHECK(cublasSetStream(blas, stream));
    CHECK(cublasSetWorkspace(blas, nullptr, 0));
    CHECK(cublasSetMathMode(blas, CUBLAS_PEDANTIC_MATH));
    CHECK(cudnnCreate(&dnn));
    CHECK(cudnnSetStream(dnn, stream));
  }
  // Never destroyed: the CUDA runtime may be torn down before thread-local
  // destructors run at exit.
};

Libraries &libraries() {
  static thread_local Libraries *instance = new Libraries();
  return *instance;
}

void finish() { CHECK(cudaStreamSynchronize(libraries().stream)); }

/// C[m x n] += op(A) op(B), all row-major, A stored k x m where `transA` and
/// B stored n x k where `transB`. cuBLAS is column-major, where a row-major
/// matrix reads as its transpose: it computes C^T = op(B)^T op(A)^T.
void accumulateProduct(const float *a, const float *b, float *c, int64_t m,
                       int64_t n, int64_t k, bool transA, bool transB,
                       int64_t batches = 1) {
  if (m == 0 || n == 0)
    return;
  const float one = 1.0f;
  int64_t lda = transA ? m : k, ldb = transB ? k : n;
  CHECK(cublasSgemmStridedBatched(
      libraries().blas, transB ? CUBLAS_OP_T : CUBLAS_OP_N,
      transA ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, b, ldb, k * n, a, lda,
      m * k, &one, c, n, m * n, batches));
  finish();
}

/// A convolution as cuDNN describes it: NCHW-style tensors of rank 4 or 5
/// (a 1-d convolution as a 2-d one of height 1), the filter of
/// features x channels-per-group x taps, and the groups.
struct ConvProblem {
  std::vector<int> input, filter, output, strides, dilations;
  int groups = 1;

  bool operator<(const ConvProblem &other) const {
    auto key = [](const ConvProblem &p) {
      return std::tie(p.input, p.filter, p.output, p.strides, p.dilations,
                      p.groups);
    };
    return key(*this) < key(other);
  }
};

/// Descriptors of one problem, and the algorithm chosen for a workspace.
struct ConvPlan {
  cudnnTensorDescriptor_t input, output;
  cudnnFilterDescriptor_t filter;
  cudnnConvolutionDescriptor_t convolution;
  std::map<size_t, cudnnConvolutionFwdAlgo_t> algorithmForWorkspace;
};

cudnnTensorDescriptor_t makeTensor(const std::vector<int> &sizes) {
  std::vector<int> strides(sizes.size());
  int stride = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= sizes[i];
  }
  cudnnTensorDescriptor_t tensor;
  CHECK(cudnnCreateTensorDescriptor(&tensor));
  CHECK(cudnnSetTensorNdDescriptor(tensor, CUDNN_DATA_FLOAT, sizes.size(),
                                   sizes.data(), strides.data()));
  return tensor;
}

ConvPlan makePlan(const ConvProblem &problem) {
  ConvPlan plan;
  plan.input = makeTensor(problem.input);
  plan.output = makeTensor(problem.output);
  CHECK(cudnnCreateFilterDescriptor(&plan.filter));
  CHECK(cudnnSetFilterNdDescriptor(plan.filter, CUDNN_DATA_FLOAT,
                                   CUDNN_TENSOR_NCHW, problem.filter.size(),
                                   problem.filter.data()));
  CHECK(cudnnCreateConvolutionDescriptor(&plan.convolution));
  // The pass hands over padded inputs: no padding here. linalg's
  // convolutions are cross-correlations, as cuDNN's are.
  std::vector<int> pads(problem.strides.size(), 0);
  CHECK(cudnnSetConvolutionNdDescriptor(
      plan.convolution, problem.strides.size(), pads.data(),
      problem.strides.data(), problem.dilations.data(), CUDNN_CROSS_CORRELATION,
      CUDNN_DATA_FLOAT));
  CHECK(cudnnSetConvolutionGroupCount(plan.convolution, problem.groups));
  CHECK(cudnnSetConvolutionMathType(plan.convolution, CUDNN_FMA_MATH));
  return plan;
}

/// The fastest algorithm cuDNN's heuristics rank for `plan` that needs at
/// most `workspaceBytes`; implicit GEMM needs none and always exists.
cudnnConvolutionFwdAlgo_t chooseAlgorithm(const ConvPlan &plan,
                                          size_t workspaceBytes) {
  cudnnConvolutionFwdAlgoPerf_t ranked[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int count = 0;
  CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
      libraries().dnn, plan.input, plan.filter, plan.convolution, plan.output,
      CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, ranked));
  for (int i = 0; i < count; ++i)
    if (ranked[i].status == CUDNN_STATUS_SUCCESS &&
        ranked[i].memory <= workspaceBytes &&
        ranked[i].mathType == CUDNN_FMA_MATH)
      return ranked[i].algo;
  return CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
}

/// The plan of `problem` and its algorithm for `workspaceBytes`, each made
/// once and kept for the process, under one lock (the host code may call
/// from several threads).
std::pair<const ConvPlan *, cudnnConvolutionFwdAlgo_t>
getPlan(const ConvProblem &problem, size_t workspaceBytes) {
  static std::mutex mutex;
  static auto *plans = new std::map<ConvProblem, ConvPlan>();
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = plans->try_emplace(problem);
  ConvPlan &plan = it->second;
  if (inserted)
    plan = makePlan(problem);
  auto [known, added] = plan.algorithmForWorkspace.try_emplace(workspaceBytes);
  if (added)
    known->second = chooseAlgorithm(plan, workspaceBytes);
  return {&plan, known->second};
}

/// output += input (*) filter, cuDNN's way.
void convolve(const ConvProblem &problem, const float *input,
              const float *filter, float *output, const Workspace *workspace) {
  size_t workspaceBytes = workspace->sizes[0];
  auto [plan, algorithm] = getPlan(problem, workspaceBytes);
  const float one = 1.0f;
  CHECK(cudnnConvolutionForward(libraries().dnn, &one, plan->input, input,
                                plan->filter, filter, plan->convolution,
                                algorithm, workspace->data(), workspaceBytes,
                                &one, plan->output, output));
  finish();
}

/// The same for memrefs of one rank.
template <int Rank>
void convolve(const ConvProblem &problem, const MemRef<Rank> *input,
              const MemRef<Rank> *filter, MemRef<Rank> *output,
              const Workspace *workspace) {
  convolve(problem, input->data(), filter->data(), output->data(), workspace);
}

std::vector<int> toInts(const int64_t *values, int count) {
  return std::vector<int>(values, values + count);
}

/// The problem of an N x C x <Spatial> convolution with the given strides
/// and dilations; a 1-d one gets a unit height in front, as cuDNN wants
/// rank 4 at least.
template <int Rank>
ConvProblem makeProblem(const MemRef<Rank> *input, const MemRef<Rank> *filter,
                        const MemRef<Rank> *output, const int64_t *strides,
                        const int64_t *dilations) {
  ConvProblem problem{toInts(input->sizes, Rank), toInts(filter->sizes, Rank),
                      toInts(output->sizes, Rank), toInts(strides, Rank - 2),
                      toInts(dilations, Rank - 2)};
  if (Rank == 3)
    for (std::vector<int> *dims :
         {&problem.input, &problem.filter, &problem.output, &problem.strides,
          &problem.dilations})
      dims->insert(dims->end() - 1, 1);
  return problem;
}

} // namespace

extern "C" {

void _mlir_ciface_vram_gpu_matmul_f32(MemRef<2> *a, MemRef<2> *b, MemRef<2> *c,
                                      int64_t transA, int64_t transB) {
  accumulateProduct(a->data(), b->data(), c->data(), c->sizes[0], c->sizes[1],
                    transA ? a->sizes[0] : a->sizes[1], transA, transB);
}

void _mlir_ciface_vram_gpu_batch_matmul_f32(MemRef<3> *a, MemRef<3> *b,
                                            MemRef<3> *c) {
  accumulateProduct(a->data(), b->data(), c->data(), a->sizes[1], b->sizes[2],
                    a->sizes[2], false, false, a->sizes[0]);
}

void _mlir_ciface_vram_gpu_conv1d_ncw_fcw_f32(
    MemRef<3> *input, MemRef<3> *filter, MemRef<3> *output,
    Workspace *workspace, int64_t stride, int64_t dilation) {
  convolve(makeProblem(input, filter, output, &stride, &dilation), input,
           filter, output, workspace);
}

void _mlir_ciface_vram_gpu_conv2d_nchw_fchw_f32(
    MemRef<4> *input, MemRef<4> *filter, MemRef<4> *output,
    Workspace *workspace, int64_t strideH, int64_t strideW, int64_t dilationH,
    int64_t dilationW) {
  int64_t strides[] = {strideH, strideW}, dilations[] = {dilationH, dilationW};
  convolve(makeProblem(input, filter, output, strides, dilations), input,
           filter, output, workspace);
}

void _mlir_ciface_vram_gpu_conv3d_ncdhw_fcdhw_f32(
    MemRef<5> *input, MemRef<5> *filter, MemRef<5> *output,
    Workspace *workspace, int64_t strideD, int64_t strideH, int64_t strideW,
    int64_t dilationD, int64_t dilationH, int64_t dilationW) {
  int64_t strides[] = {strideD, strideH, strideW},
          dilations[] = {dilationD, dilationH, dilationW};
  convolve(makeProblem(input, filter, output, strides, dilations), input,
           filter, output, workspace);
}

/// Input N x G x C x H x W, filter G x F x C x KH x KW, output
/// N x G x F x OH x OW: in memory the same as N x GC x H x W, GF x C x KH x
/// KW and N x GF x OH x OW with G groups, which is how cuDNN takes them.
void _mlir_ciface_vram_gpu_conv2d_ngchw_gfchw_f32(
    MemRef<5> *input, MemRef<5> *filter, MemRef<5> *output,
    Workspace *workspace, int64_t strideH, int64_t strideW, int64_t dilationH,
    int64_t dilationW) {
  const int64_t *in = input->sizes, *w = filter->sizes, *out = output->sizes;
  ConvProblem problem{
      {int(in[0]), int(in[1] * in[2]), int(in[3]), int(in[4])},
      {int(w[0] * w[1]), int(w[2]), int(w[3]), int(w[4])},
      {int(out[0]), int(out[1] * out[2]), int(out[3]), int(out[4])},
      {int(strideH), int(strideW)},
      {int(dilationH), int(dilationW)},
      int(in[1])};
  convolve(problem, input->data(), filter->data(), output->data(), workspace);
}

} // extern "C"
