//===- VramOps.td - offload, prefetch ----------------------*- tablegen -*-===//

#ifndef VRAM_DIALECT_VRAM_VRAMOPS_TD
#define VRAM_DIALECT_VRAM_VRAMOPS_TD

include "vram/Dialect/Vram/VramDialect.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Vram_HostTensor : Type<CPred<"::llvm::isa<::vram::HostTensorType>($_self)">,
                           "host tensor", "::vram::HostTensorType">;

// Both copies read their operand and allocate their result. Declaring that
// (rather than Pure) keeps CSE from merging two prefetches of one host copy,
// which would stretch one device tensor across the gap the plan opened, and
// still lets DCE drop a copy nobody reads.
class Vram_Op<string mnemonic, list<Trait> traits = []> :
    Op<Vram_Dialect, mnemonic, traits> {
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

//===----------------------------------------------------------------------===//
// What a value is for: the attributes the memory analysis reads
//===----------------------------------------------------------------------===//

// `vram.param = #vram.param<trainable>` on a function argument: what the
// argument holds from one step to the next. Set by the importer (an
// initializer) and by vram-train.
def Vram_ParamKind : I32EnumAttr<"ParamKind",
    "what a function argument holds across steps", [
    I32EnumAttrCase<"Trainable", 0, "trainable">,
    I32EnumAttrCase<"State", 1, "state">,
    I32EnumAttrCase<"OptimizerState", 2, "optimizer_state">,
    I32EnumAttrCase<"Gradient", 3, "gradient">]> {
  let cppNamespace = "::vram";
  let genSpecializedAttr = 0;
}
def Vram_ParamKindAttr : EnumAttr<Vram_Dialect, Vram_ParamKind, "param"> {
  let assemblyFormat = "`<` $value `>`";
}

// `vram.phase = #vram.phase<backward>` on an op of a training step's
// backward pass or optimizer update; forward ops have none.
def Vram_Phase : I32EnumAttr<"Phase", "the part of a training step an op is", [
    I32EnumAttrCase<"Backward", 0, "backward">,
    I32EnumAttrCase<"Optimizer", 1, "optimizer">]> {
  let cppNamespace = "::vram";
  let genSpecializedAttr = 0;
}
def Vram_PhaseAttr : EnumAttr<Vram_Dialect, Vram_Phase, "phase"> {
  let assemblyFormat = "`<` $value `>`";
}

// The categories of the memory analysis and its reports;
// `vram.category = #vram.category<gradient>` on an op sets the category of
// all its results.
def Vram_MemoryCategory : I32EnumAttr<"MemoryCategory",
    "what the bytes of a buffer are for", [
    I32EnumAttrCase<"Parameter", 0, "parameter">,
    I32EnumAttrCase<"State", 1, "state">,
    I32EnumAttrCase<"Input", 2, "input">,
    I32EnumAttrCase<"SavedActivation", 3, "saved_activation">,
    I32EnumAttrCase<"Activation", 4, "activation">,
    I32EnumAttrCase<"Output", 5, "output">,
    I32EnumAttrCase<"Gradient", 6, "gradient">,
    I32EnumAttrCase<"OptimizerState", 7, "optimizer_state">,
    I32EnumAttrCase<"Workspace", 8, "workspace">,
    I32EnumAttrCase<"Communication", 9, "communication">]> {
  let cppNamespace = "::vram";
  let genSpecializedAttr = 0;
}
def Vram_MemoryCategoryAttr :
    EnumAttr<Vram_Dialect, Vram_MemoryCategory, "category"> {
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

def Vram_UpdateRule : I32EnumAttr<"UpdateRule", "an optimizer's update rule", [
    I32EnumAttrCase<"SGD", 0, "sgd">,
    I32EnumAttrCase<"Momentum", 1, "momentum">,
    I32EnumAttrCase<"Adam", 2, "adam">,
    I32EnumAttrCase<"AdamW", 3, "adamw">]> {
  let cppNamespace = "::vram";
  let genSpecializedAttr = 0;
}
// `#vram.rule<adam>` on its own; a bare keyword in vram.update's format.
def Vram_UpdateRuleAttr : EnumAttr<Vram_Dialect, Vram_UpdateRule, "rule">;

def Vram_F32Scalar : 0DTensorOf<[F32]>;

// Destination-passing: each result is the new content of its init, so the
// memory analysis and bufferization see one buffer per parameter and per
// state tensor, updated where it lives (a donated argument), as PyTorch's
// in-place optimizers and JAX's donated buffers do.
def Vram_UpdateOp : Op<Vram_Dialect, "update", [
    Pure, AttrSizedOperandSegments, DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "one optimizer step of a parameter and its state, in place";
  let description = [{
    Applies `rule` to a parameter (the first init) and its optimizer state
    (the other inits) given the parameter's gradient, as one fused
    elementwise op that reads and writes each tensor once. Inits per rule:
    sgd `(param)`, momentum `(param, velocity)`, adam and adamw
    `(param, exp_avg, exp_avg_sq)`; adam and adamw also read `step`, the
    step number t (already counted) for the bias corrections. `scale`, when
    present, multiplies the gradient first (clipping by global norm).

    - sgd: p -= lr g
    - momentum: v = momentum v + g; p -= lr v
    - adam(w): m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g^2;
      p -= lr ((m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + epsilon)
      [+ weight_decay p for adamw])

    `weight_decay` is L2 (added to the gradient) except for adamw, where it
    is decoupled.

    With `accumulate` = N > 1 (gradient accumulation over N micro-batches)
    the last init is the accumulated gradient `a`, and `step` counts
    micro-batches (already counted): a += g; on every N-th micro-batch the
    rule runs with the mean a / N (and Adam's t = step / N) and a is
    cleared; on the others the parameter and its state keep their values.

    Half-precision tensors are computed in f32 and rounded once (PyTorch's
    fused optimizers do the same).

    With `master`, the parameter is half and the second init is its f32
    master copy (DeepSpeed's and Megatron's mixed precision): the rule
    updates the master weights and the f32 state, and the parameter becomes
    the new master weights rounded. Inits: `(param, master, state...)`.

    ```mlir
    %p1, %m1, %v1 = vram.update adam %g step %t into %p, %m, %v
        {learning_rate = 1.0e-3 : f64}
        : tensor<64xf32>, tensor<f32> -> tensor<64xf32>, tensor<64xf32>,
          tensor<64xf32>
    ```
  }];
  let arguments = (ins Vram_UpdateRuleAttr:$rule, F64Attr:$learning_rate,
      DefaultValuedAttr<F64Attr, "0.0">:$momentum,
      DefaultValuedAttr<F64Attr, "0.9">:$beta1,
      DefaultValuedAttr<F64Attr, "0.999">:$beta2,
      DefaultValuedAttr<F64Attr, "1.0e-8">:$epsilon,
      DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
      DefaultValuedAttr<I64Attr, "1">:$accumulate, UnitAttr:$master,
      AnyRankedTensor:$gradient, Optional<Vram_F32Scalar>:$step,
      Optional<Vram_F32Scalar>:$scale, Variadic<AnyRankedTensor>:$inits);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    custom<UpdateRule>($rule) $gradient (`step` $step^)? (`scale` $scale^)?
    `into` $inits attr-dict
    `:` type($gradient) (`,` type($step)^)? (`,` type($scale)^)? `->` type($inits)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getInitsMutable();
    }
    /// The state tensors `rule` keeps besides the parameter (the inits after
    /// it), by PyTorch's names: momentum; exp_avg, exp_avg_sq.
    static ::llvm::ArrayRef<::llvm::StringRef> getStateNames(UpdateRule rule);
    /// Whether `rule` reads the step count (Adam's bias corrections).
    static bool readsStepCount(UpdateRule rule) {
      return rule == UpdateRule::Adam || rule == UpdateRule::AdamW;
    }
    /// Whether this update reads the step count: for its rule, or to know
    /// which micro-batch completes an accumulated step.
    bool needsStepCount() {
      return readsStepCount(getRule()) || getAccumulate() > 1;
    }
  }];
}

def Vram_IncrementOp : Op<Vram_Dialect, "increment", [
    Pure, DestinationStyleOpInterface, AllTypesMatch<["init", "result"]>]> {
  let summary = "adds one to a scalar counter, in place";
  let description = [{
    Counts optimizer steps: the result is `init + 1`, in the init's buffer.

    ```mlir
    %t1 = vram.increment %t : tensor<f32>
    ```
  }];
  let arguments = (ins Vram_F32Scalar:$init);
  let results = (outs Vram_F32Scalar:$result);
  let assemblyFormat = "$init attr-dict `:` type($init)";
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getInitMutable();
    }
  }];
}

def Vram_TensorParallelCopyOp : Op<Vram_Dialect, "tensor_parallel_copy", [
    Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "where a tensor-parallel layer reads a replicated tensor";
  let description = [{
    Megatron-LM's `f`: the input is the same on every rank of the grid's
    `grid_axes`, and the ops after it compute each rank's part of a layer
    split among them (vram-tensor-parallel). In the forward pass it is the
    input itself (a view). In the backward pass each rank's gradient of the
    result holds only its part's contribution: the gradient of the input is
    their sum, a `shard.all_reduce <sum>` over the same axes.

    ```mlir
    %x1 = vram.tensor_parallel_copy %x on @ranks grid_axes = [1] : tensor<4x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$grid,
                       DenseI16ArrayAttr:$grid_axes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $grid `grid_axes` `=` $grid_axes attr-dict `:` type($result)
  }];
}

#endif // VRAM_DIALECT_VRAM_VRAMOPS_TD
