//===- VramOps.td - offload, prefetch ----------------------*- tablegen -*-===//

#ifndef VRAM_DIALECT_VRAM_VRAMOPS_TD
#define VRAM_DIALECT_VRAM_VRAMOPS_TD

include "vram/Dialect/Vram/VramDialect.td"
include "vram/Analysis/CostModelInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Vram_HostTensor : Type<CPred<"::llvm::isa<::vram::HostTensorType>($_self)">,
                           "host tensor", "::vram::HostTensorType">;

// Both copies read their operand and allocate their result. Declaring that
// (rather than Pure) keeps CSE from merging two prefetches of one host copy,
// which would stretch one device tensor across the gap the plan opened, and
// still lets DCE drop a copy nobody reads.
class Vram_Op<string mnemonic, list<Trait> traits = []> :
    Op<Vram_Dialect, mnemonic,
       !listconcat(traits, [DeclareOpInterfaceMethods<CostModelOpInterface>])> {
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bytes the copy moves over the host link.
    uint64_t getTransferBytes();
    /// The device-side tensor type.
    ::mlir::RankedTensorType getDeviceType();
  }];
}

def Vram_OffloadOp : Vram_Op<"offload"> {
  let summary = "copies a device tensor to pinned host memory";
  let description = [{
    Starts a copy of `input` to host memory on a copy engine. After the
    offload the device tensor may be freed (its last use can be this op); the
    host value is brought back with `vram.prefetch`.

    ```mlir
    %h = vram.offload %a : tensor<64x256xf32> -> !vram.host<tensor<64x256xf32>>
    ```
  }];
  let arguments = (ins Arg<AnyRankedTensor, "the device tensor", [MemRead]>:$input);
  let results = (outs Res<Vram_HostTensor, "its host copy", [MemAlloc]>:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` qualified(type($result))";
}

def Vram_PrefetchOp : Vram_Op<"prefetch"> {
  let summary = "copies a host tensor back into a new device tensor";
  let description = [{
    Allocates a device tensor and fills it from a host copy made by
    `vram.offload`. The result holds the same data as the offloaded tensor.

    ```mlir
    %a1 = vram.prefetch %h : !vram.host<tensor<64x256xf32>> -> tensor<64x256xf32>
    ```
  }];
  let arguments = (ins Arg<Vram_HostTensor, "the host copy", [MemRead]>:$input);
  let results = (outs Res<AnyRankedTensor, "the device tensor", [MemAlloc]>:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` qualified(type($result))";
}

#endif // VRAM_DIALECT_VRAM_VRAMOPS_TD
