//===- CostModelInterface.td - per-op compute and traffic cost -*- tablegen -*-===//
//
// The cost the memory planner weighs against bytes: recomputing a tensor costs
// the time of the ops that produce it, and that time is estimated with a
// roofline from the numbers below (see DeviceProfile.h, docs/cost-model.md).
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_ANALYSIS_COSTMODELINTERFACE_TD
#define VRAM_ANALYSIS_COSTMODELINTERFACE_TD

include "mlir/IR/OpBase.td"

def CostModelOpInterface : OpInterface<"CostModelOpInterface"> {
  let description = [{
    Static cost of executing one op once: floating-point work, memory traffic
    and scratch memory. Implemented as external models (CostModel.cpp) for the
    onnx dialect and for every linalg structured op, so that dialects need not
    depend on the analysis. Ops without it get the default of
    `vram::estimateOpCost`.

    Dimensions that are dynamic count as 1, so for such ops the numbers are
    lower bounds; `vram::estimateOpCost` flags that case.
  }];
  let cppNamespace = "::vram";

  let methods = [
    InterfaceMethod<[{
        Floating-point (or integer arithmetic) operations, a multiply-add
        counting as 2. Zero for pure data movement and for views.
      }],
      "double", "getFlops">,
    InterfaceMethod<[{
        Bytes read plus bytes written in device memory by an implementation
        that touches each operand and result once: the numerator of the
        roofline's memory term. Zero for ops that only alias their operand.
      }],
      "double", "getBytesAccessed">,
    InterfaceMethod<[{
        Scratch device memory the kernel needs while it runs, beyond its
        operands and results (e.g. the im2col buffer of a GEMM-based
        convolution). It is live only during the op.
      }],
      "uint64_t", "getWorkspaceBytes", (ins), [{}], [{ return 0; }]>,
  ];
}

#endif // VRAM_ANALYSIS_COSTMODELINTERFACE_TD
