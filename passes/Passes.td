//===- Passes.td - Target-independent passes ------------------*- tablegen -*-===//
//
// Transformations that every target shares. None of them knows which target
// will run its output.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_PASSES
#define TESSEL_PASSES

include "mlir/Pass/PassBase.td"

def TesselFoldBatchNormPass : Pass<"tessel-fold-batch-norm", "mlir::func::FuncOp"> {
  let summary = "Fold inference batch normalization into convolutions and affine maps";
  let description = [{
    A `tessel.batch_norm` whose parameters are constants becomes either part
    of the preceding convolution (scaled weights, shifted bias) when the
    convolution's weights are constant and the normalization is its only
    user, or a per-channel multiply-add whose coefficients are computed at
    compile time. Normalizations with runtime parameters are left alone.
  }];
  let dependentDialects = ["tessel::TesselDialect"];
}

def TesselSinkReshapesPass : Pass<"tessel-sink-reshapes", "mlir::func::FuncOp"> {
  let summary = "Compute elementwise ops before reshapes that add or drop unit axes";
  let description = [{
    An elementwise op reading a reshape that only inserts or drops axes of
    extent 1 (a MatMul's [S, N] result viewed as [1, S, N] or [S, 1, N])
    computes on the reshape's source, and the reshape moves after it, so
    that the bias add and activation join the MatMul's kernel.
  }];
  let dependentDialects = ["tessel::TesselDialect"];
}

def TesselChannelsLastPass : Pass<"tessel-channels-last", "mlir::func::FuncOp"> {
  let summary = "Compute 2-D convolutions and pooling in NHWC, transposes cancelled";
  let description = [{
    Every regular or depthwise 2-D convolution, max or average pooling and
    global average pooling gets the `channels_last` form (NHWC input and
    result, HWCF weight) between two transposes; the NHWC -> NCHW
    transposes then sink through elementwise ops, concatenations and
    reductions until they meet the next NCHW -> NHWC transpose and cancel.
    For targets that vectorize convolutions along the channels. Results
    marked `tessel.any_layout` are returned as computed, NHWC included.
  }];
  let dependentDialects = ["tessel::TesselDialect"];
}

def TesselBf16ProductsPass : Pass<"tessel-bf16-products", "mlir::func::FuncOp"> {
  let summary = "Compute matrix products and convolutions on bf16 operands";
  let description = [{
    A product marked `tessel.precision = "bf16"` (by post-training
    quantization, for a layer INT8 would spoil), or with `all` every f32
    matmul, gemm and ungrouped convolution of static shapes whose weight is
    a constant, reads a `tessel.cast` of its input to bf16 and a bf16
    constant of its weight, rounded half to even at compile time; its
    result and bias stay f32, and the lowering accumulates in f32. A gemm's
    transposed B is stored transposed back, so that its rows run along the
    reduction as in every other product.
  }];
  let options = [
    Option<"all", "all", "bool", "false",
           "Every eligible product, not only those marked bf16 (--precision bf16)">,
  ];
  let dependentDialects = ["tessel::TesselDialect"];
}

def TesselFormKernelsPass : Pass<"tessel-form-kernels", "mlir::ModuleOp"> {
  let summary = "Group ops into kernels and outline each into a function";
  let description = [{
    Each compute op starts a kernel; an elementwise op joins the kernel of
    the operand it consumes when that operand has no other user and keeps
    its shape (so Conv+Add+Relu becomes one kernel). Each kernel is outlined
    into a private `func.func` marked `tessel.kernel` and called from the
    model's entry function, which keeps constants and reshapes (views).
    Small constants are cloned into the kernels that use them; the others
    stay in the entry function and are passed as arguments, so the artifact
    writer can place them among the weights.

    With `fuse-attention`, a MatMul (and its elementwise epilogue), a
    softmax along the last axis of its result and a MatMul of the softmax
    by another operand form one kernel, when each feeds only the next: a
    target can then compute attention a tile of query rows at a time.

    With `separate-dequantize`, a dequantize starts a kernel of its own
    instead of joining its producer's: a quantized product then ends its
    kernel with its quantized result, which a target that computes in
    integers alone (the NPU) can run.
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
  let options = [
    Option<"maxInlinedConstantElements", "max-inlined-constant-elements",
           "int64_t", "16",
           "Constants with at most this many elements are cloned into kernels">,
    Option<"fuseAttention", "fuse-attention", "bool", "false",
           "Form one kernel of MatMul, Softmax and MatMul (attention)">,
    Option<"separateDequantize", "separate-dequantize", "bool", "false",
           "Start a kernel at each dequantize rather than fuse it into its producer">,
  ];
}

def TesselInsertQuantizationPass
    : Pass<"tessel-insert-quantization", "mlir::func::FuncOp"> {
  let summary = "Quantize a calibrated float graph (post-training quantization)";
  let description = [{
    Each value that calibration gave a range (`tessel.calibrated_range`,
    on its op or function argument) is quantized to 8 bits over that range
    and dequantized for its readers: u8 with a zero point by default (the
    range widened to hold 0), s8 symmetric with `signed-activations`.
    Each quantizable product's constant weight becomes a per-output-channel
    symmetric s8 constant (with `fit-weight-pairs`, levels whose adjacent
    pairs of input channels fit 16-bit sums, for the products doing at least
    `fit-min-work-share` of the multiply-adds), dequantized; its float bias is left for
    tessel-fuse-quantized-ops, which quantizes it to i32 at the product's
    scales. Products marked `tessel.precision = "f32"` keep their float
    weight and read their float input. What is left is the QDQ form that
    tessel-fuse-quantized-ops turns into integer ops.
  }];
  let options = [
    Option<"signedActivations", "signed-activations", "bool", "false",
           "Quantize activations to s8 symmetric instead of u8">,
    Option<"fitWeightPairs", "fit-weight-pairs", "bool", "false",
           "Choose weight levels whose pairs along the reduction fit VPMADDUBSW's "
           "16-bit sums (WeightQuantization.h)">,
    Option<"fitMinWorkShare", "fit-min-work-share", "double", "0.0",
           "With fit-weight-pairs, fit only the products doing at least this share "
           "of the function's multiply-adds">,
  ];
  let dependentDialects = ["tessel::TesselDialect"];
}

def TesselFuseQuantizedOpsPass : Pass<"tessel-fuse-quantized-ops", "mlir::func::FuncOp"> {
  let summary = "Turn float islands between dequantize and quantize into quantized ops";
  let description = [{
    quantize(op(dequantize(x)...)) becomes the quantized form of op:
    convolutions, matrix products and gemms (with a ReLU or Clip between
    them and the quantization), add, sub and mul, poolings, ops that move
    elements, and chains of elementwise ops of one 8-bit tensor (a
    tessel.lookup table, computed at compile time). A product of
    dequantized operands read as float becomes the dequantization of its
    i32 accumulator. Islands are fused in program order, so that the table
    of an inner activation composes into the one around it. Constant
    weights are then stored signed with zero point 0 where they fit, and
    dequantized constants left for float ops fold into float constants.
  }];
  let dependentDialects = ["tessel::TesselDialect"];
}

def TesselExpandQuantizedOpsPass
    : Pass<"tessel-expand-quantized-ops", "mlir::ModuleOp"> {
  let summary = "Compute quantized ops as the float formulas that define them";
  let description = [{
    Quantized add, sub and mul, average poolings and requantizations mean a
    float formula: dequantize the operands, compute in the expressed type,
    quantize the result. They become that formula (the shared lowering does
    this first, and lowers only quantize, dequantize, lookups and the
    integer products itself).

    With `all`, every quantized op becomes float arithmetic on its storage
    integers: quantize and dequantize their ONNX formulas, relu and clip
    comparisons of storage values, and convolutions and matrix products the
    f32 product of zero-point-centred operands (exact while sums stay below
    2^24), requantized in f32. That is the reference oracle of the integer
    kernels and the form for targets without them.
  }];
  let dependentDialects = ["tessel::TesselDialect"];
  let options = [
    Option<"all", "all", "bool", "false",
           "Expand every quantized op, not only the float-defined ones">,
  ];
}

def ConvertTesselToLinalgPass : Pass<"convert-tessel-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lower tessel ops to linalg, tensor and arith on tensors";
  let description = [{
    The lowering that every target shares. Elementwise ops become
    `linalg.generic`s whose broadcast operands are collapsed views,
    contractions and windows become generics or named linalg ops, and
    unsigned integer tensors become signless ones (the signedness is kept in
    the choice of arith ops). Function signatures and calls are converted
    along with the ops.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::bufferization::BufferizationDialect",
    "mlir::linalg::LinalgDialect", "mlir::math::MathDialect", "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect",
  ];
}

def TesselLengthAxesPass : Pass<"tessel-length-axes", "mlir::ModuleOp"> {
  let summary = "Mark the positions past the varying length that nothing reads";
  let description = [{
    For a model compiled with --max-shape (@main's arguments carry
    `tessel.varying`, one of them `tessel.length`): walks @main back from
    its results, which the runtime trims to the length, into each kernel it
    calls once, and finds the positions past the length that nothing reads.
    Ops that keep positions apart (a linalg loop that is parallel and
    indexes the same axis of its results, reshapes, slices that keep an
    axis whole) pass that on to their operands; a `tessel.where` with
    `fills_past_length` reads its value only below the length; any other
    reader reads everything. A kernel whose result's positions past the
    length along an axis are never read gets `tessel.length_axis` on that
    result, and so does each linalg op in it (the outermost such axis of
    its result): a target may leave those positions uncomputed.
  }];
}

def TesselNumberConstantsPass : Pass<"tessel-number-constants", "mlir::ModuleOp"> {
  let summary = "Name and order constant globals by their first use";
  let description = [{
    Bufferization creates a `memref.global` for every constant tensor, in an
    order and with name suffixes that can change from one run to the next.
    This pass renames them `__constant_N` in the order the kernels first use
    them and moves them into that order, so that compiling a model twice
    gives the same bytes. Every target that bufferizes runs it.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

#endif // TESSEL_PASSES
