//===- Passes.td - x86 code generation passes -----------------*- tablegen -*-===//

#ifndef TESSEL_TARGETS_X86_PASSES
#define TESSEL_TARGETS_X86_PASSES

include "mlir/Pass/PassBase.td"

def TesselX86FuseElementwisePass
    : Pass<"tessel-x86-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Merge chains of elementwise generics into one generic";
  let description = [{
    An elementwise generic whose result only another elementwise generic
    reads is merged into it (linalg's elementwise fusion), so that an
    activation built from several ONNX ops (sigmoid then multiply for SiLU,
    divide, erf, add and two multiplies for GELU) is one loop, and one
    epilogue that a register block applies, instead of a chain of
    intermediate tensors. Contractions and convolutions are never fused
    into: their bodies stay the multiply-accumulates that targets block.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def TesselX86ChooseLoweringPass : Pass<"tessel-x86-choose-lowering", "mlir::ModuleOp"> {
  let summary = "Choose each register-blocked op's blocks once and record them";
  let description = [{
    Runs on the whole module (kernels and the host function) before
    PackWeights. Every contraction and NHWC window op that register blocking
    handles gets a `tessel.lowering_config` (LoweringConfig.h): its register
    block per result axis, chosen for the op's whole extents from the vector
    width and register count of the ISA, and for an INT8 or bf16 op its
    dot-product instruction (VPMADDUBSW where its constant weight's byte
    pairs fit).
    PackWeights, TileAndFuse and Vectorize read the attribute and decide
    nothing of their own. An op that already carries a config keeps it,
    after a check that the emitters can follow it.
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", "16",
           "f32 lanes of the widest vector register (16 for AVX-512, 8 for AVX2)">,
    Option<"dotProduct", "dot-product", "std::string", "\"pmaddwd\"",
           "The ISA's 4-way u8 x s8 dot product: vnni (VPDPBUSD) or pmaddwd "
           "(two VPMADDWD); VPMADDUBSW is chosen per op where its weights fit">,
    Option<"bf16DotProduct", "bf16-dot-product", "std::string", "\"bf16-fma\"",
           "The ISA's bf16 pair dot product: dpbf16ps (VDPBF16PS, AVX512-BF16) or "
           "bf16-fma (two FMAs of the halves widened to f32)">,
    Option<"amx", "amx", "bool", "false",
           "The CPU has AMX-INT8 tiles: INT8 convolutions whose input channels "
           "are whole groups of four compute on them (dot_product \"amx\")">,
    Option<"cacheLine", "cache-line", "int64_t", "64", "Bytes of a cache line">,
    Option<"l1Sets", "l1-sets", "int64_t", "64", "Sets of the L1 data cache">,
    Option<"l1Ways", "l1-ways", "int64_t", "8",
           "Ways of each set of the L1 data cache: a convolution block's pixels "
           "read their input runs together only where no set holds more runs than "
           "its ways less two (kept for the filter stream)">,
  ];
}

def TesselX86TileAndFusePass : Pass<"tessel-x86-tile-and-fuse", "mlir::func::FuncOp"> {
  let summary = "Tile each kernel into workgroups and fuse its producers";
  let description = [{
    Finds the op that computes a kernel's result, tiles its parallel loops
    into an `scf.forall` of workgroups sized from a cost estimate, and fuses
    every producer in the kernel into the tile (Conv+Add+Relu computes one
    output tile at a time). Workgroups are what the runtime's thread pool
    spreads over its threads. A kernel with a register-blocked op gives
    each workgroup whole blocks of its `tessel.lowering_config`.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::tensor::TensorDialect"];
  let options = [
    Option<"maxWorkgroups", "max-workgroups", "int64_t", "64",
           "Upper bound on the number of workgroups of one kernel">,
    Option<"minWorkPerWorkgroup", "min-work-per-workgroup", "int64_t", "524288",
           "Scalar operations (iterations times body operations, a "
           "transcendental counting for twelve) below which a kernel is not split">,
  ];
}

def TesselX86PackWeightsPass : Pass<"tessel-x86-pack-weights", "mlir::ModuleOp"> {
  let summary = "Store constant matmul weights in panels of contiguous columns";
  let description = [{
    Runs on the whole module (kernels and the host function) before the
    kernels go to code generation. A kernel contraction C[M, N] += A[M, K] *
    B[K, N] whose B is a constant of the host function, read by that kernel
    alone, gets B at compile time as panels [N / P, K, P], P the last
    extent of the contraction's register block in its
    `tessel.lowering_config` (tessel-x86-choose-lowering), and restores it with a linalg.unpack
    that register blocking reads through. Without it the rows of a block's
    B segment, N * 4 bytes apart, share cache sets for power-of-two N. NHWC
    convolution filters [KH, KW, C, F] become [F / P, KH, KW, C, P] alike.
    The 8-bit weights of integer contractions become dot panels, [N / P,
    K / 4, P, 4] and [F / P, KH, KW, C / 4, P, 4]: four consecutive k of a
    column side by side, as dot-product instructions read them; bf16
    weights likewise with pairs, [N / P, K / 2, P, 2].
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def TesselX86PadChannelTailsPass : Pass<"tessel-x86-pad-channel-tails", "mlir::ModuleOp"> {
  let summary = "Compute the padded channels of a weight's last panel too";
  let description = [{
    Runs on the whole module after tessel-x86-pack-weights. Workgroups take
    whole register blocks of one static shape, so a kernel whose output
    channels are no multiple of its block's (SqueezeNet's classifier: 1000
    channels, blocks of 48) cannot split them, and splits its pixels
    instead: every workgroup then reads the whole weight. Where the weight
    is the larger operand, such a kernel computes the zero channels that
    its last weight panel is padded with too (at most an eighth more): its
    result and every value along its channels are widened to whole panels,
    channel constants padded, and the kernels reading the
    result (with elementwise generics only) take its first channels as a
    slice. Kernels whose result goes elsewhere are left as they are.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::tensor::TensorDialect"];
}

def TesselX86VectorizePass : Pass<"tessel-x86-vectorize", "mlir::func::FuncOp"> {
  let summary = "Tile the ops of each workgroup to vector sizes and vectorize them";
  let description = [{
    Inside a workgroup, contractions and NHWC window ops that carry a
    `tessel.lowering_config` become loops over the register blocks it names
    (ContractionBlocking, ChannelsLastBlocking). Every other linalg op with
    static shapes and projected-permutation indexing maps is tiled once more
    so that each step works on a row of `vector-width`-multiple elements, and
    the step is vectorized with linalg's vectorizer. 2-D NCHW convolutions
    become register blocks too: a few output channels x one output-row
    segment, accumulated over (c, kh, kw) in loop-carried vectors, their
    sizes divisors of the workgroup's extents. Ops it cannot vectorize
    (windowed reductions) stay as loops.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::vector::VectorDialect",
                           "mlir::tensor::TensorDialect", "mlir::LLVM::LLVMDialect",
                           "mlir::amx::AMXDialect", "mlir::bufferization::BufferizationDialect",
                           "mlir::memref::MemRefDialect"];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", "16",
           "f32 lanes of the widest vector register (16 for AVX-512, 8 for AVX2)">,
  ];
}

def TesselX86LowerVectorsPass : Pass<"tessel-x86-lower-vectors", "mlir::func::FuncOp"> {
  let summary = "Keep accumulators in registers and lower vector ops for LLVM";
  let description = [{
    After bufferization: hoists loop-invariant transfers out of reduction
    loops (a matmul's accumulator tile stays in registers across k), then
    lowers contractions (k stepped one at a time) to elementwise
    broadcast-multiply-adds that LLVM turns into FMAs, reductions,
    transposes and transfers to the 1-D vector operations LLVM maps onto
    AVX2/AVX-512 instructions. With byte permutes (AVX512-VBMI), a gather
    of bytes from a 256-byte table by byte indices (the lookup tables of
    INT8 activations) becomes two VPERMI2B per 64 bytes instead of one
    scalar load per byte (ByteLookup.h).
  }];
  let options = [
    Option<"bytePermutes", "byte-permutes", "bool", "false",
           "The CPU permutes bytes across 64-byte vectors (AVX512-VBMI)">,
  ];
  let dependentDialects = ["mlir::vector::VectorDialect", "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect", "mlir::LLVM::LLVMDialect"];
}

def TesselX86WorkgroupLoopPass : Pass<"tessel-x86-workgroup-loop", "mlir::func::FuncOp"> {
  let summary = "Turn a kernel's workgroup forall into a loop over a range";
  let description = [{
    After bufferization, a kernel whose work is one `scf.forall` gets two
    index arguments, [begin, end), and runs workgroups begin..end-1 of the
    forall's linearized iteration space; the count is recorded in the
    `tessel.workgroup_count` attribute. A kernel with work outside such a
    forall is one workgroup. The byte size of each of its (statically
    shaped) buffer arguments is recorded in `tessel.binding_bytes`. This is
    the CPU half of the dispatch ABI in runtime/schema/KernelAbi.h.
  }];
  let dependentDialects = ["mlir::affine::AffineDialect", "mlir::scf::SCFDialect"];
}

def TesselX86ControlFlowToLLVMPass
    : Pass<"tessel-x86-control-flow-to-llvm", "mlir::ModuleOp"> {
  let summary = "Lower cf to LLVM, AMX tiles carried across branches included";
  let description = [{
    Upstream's convert-cf-to-llvm with the AMX tile type in its type
    converter: AMX blocks carry their accumulator tiles around their loops,
    so after scf-to-cf the tiles are block arguments, which upstream's pass
    (whose converter only the vector lowering's AMX option extends) leaves
    illegal.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def TesselX86ScratchPass : Pass<"tessel-x86-scratch", "mlir::func::FuncOp"> {
  let summary = "Carve a kernel's temporary buffers out of per-thread scratch";
  let description = [{
    Replaces every static `memref.alloc` of a kernel by a view into a
    scratch buffer passed as the kernel's last argument, which the runtime
    gives each thread once. The total, 64-byte aligned, is recorded in the
    `tessel.scratch_bytes` attribute. Kernels thus never allocate, never
    free and never depend on the caller's stack size.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::memref::MemRefDialect"];
}

def TesselX86RoundedQuotientsPass
    : Pass<"tessel-x86-rounded-quotients", "mlir::func::FuncOp"> {
  let summary = "Divide by a constant with FMAs where the quotient is rounded";
  let description = [{
    `arith.divf %x, %c` (f32, a normal constant or splat whose reciprocal is
    normal) whose every use is `math.roundeven` becomes q = x * r with
    r = RN(1 / c), corrected by the remainder: RN(q + fma(-q, c, x) * r),
    which rounds to the same integer as the division for every x
    (Markstein's theorem; q itself where the correction is NaN: x infinite
    or NaN, or x * r overflowing). Quantization's rint(x / scale) then takes
    two FMAs and a multiply instead of VDIVPS. Only for CPUs with FMA.
  }];
  let dependentDialects = ["mlir::math::MathDialect", "mlir::arith::ArithDialect"];
}

def TesselX86ExpandToPrimitivesPass
    : Pass<"tessel-x86-expand-to-primitives", "mlir::func::FuncOp"> {
  let summary = "Replace ops that would need a support library";
  let description = [{
    The shared object that x86 kernels compile to must not depend on MLIR's
    runner utilities or on libm's scalar calls in hot loops: `memref.copy`
    becomes loops of 64-byte vector transfers along a contiguous innermost
    axis (else `linalg.copy`, then scalar loops), and transcendental `math`
    ops become polynomial approximations that vectorize.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::math::MathDialect",
                           "mlir::arith::ArithDialect", "mlir::vector::VectorDialect",
                           "mlir::scf::SCFDialect", "mlir::ub::UBDialect"];
}

def TesselX86EntryPointsPass : Pass<"tessel-x86-entry-points", "mlir::ModuleOp"> {
  let summary = "Export each lowered kernel through the CPU dispatch ABI";
  let description = [{
    For every kernel (an `llvm.func` carrying `tessel.workgroup_count`),
    emits an exported function
    `int32_t <kernel>_entry(const tsl_cpu_kernel_call *call)` (KernelAbi.h)
    that checks the call against what the kernel was compiled for (binding
    count and sizes, workgroup range, scratch), returning 1 without running
    when they differ, then loads the kernel's buffer pointers from the
    bindings table, calls it and returns 0. The kernels themselves become
    internal and are inlined.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // TESSEL_TARGETS_X86_PASSES
