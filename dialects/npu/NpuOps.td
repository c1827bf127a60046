//===- NpuOps.td - The npu dialect: one op per NPU instruction -*- tablegen -*-===//
//
// The Tessel NPU's command stream as IR: an `npu.program` per kernel holding
// its instructions in program order, one op per instruction of
// docs/npu/isa.md. Every field is an attribute named as the ISA names it
// (absent: the field's default), so the printed IR is the stream, readable,
// and the serializer encodes it with the ISA's own encoder
// (runtime/schema/NpuIsa.h).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_DIALECT_NPU_OPS
#define TESSEL_DIALECT_NPU_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributes.td"

def Npu_Dialect : Dialect {
  let name = "npu";
  let cppNamespace = "::tessel::npu";
  let summary = "The Tessel NPU's instructions";
  let description = [{
    One op per instruction of the Tessel NPU (docs/npu/isa.md), inside an
    `npu.program` per kernel. The ops are the last form before the command
    stream: tiling, buffering and dependency tokens are decided, and each
    field of each instruction is an attribute. What the dialect is for and
    is not: docs/dialects/npu.md.
  }];
}

def Npu_ProgramOp : Op<Npu_Dialect, "program", [
    IsolatedFromAbove, NoTerminator, SingleBlock]> {
  let summary = "The instructions of one kernel, in program order";
  let description = [{
    One dispatchable entry of an NPU executable, for the kernel function
    `kernel` (which the host calls): its instructions run in program order
    through the load, execute and store queues. `bindings` holds the byte
    size of each buffer the kernel binds (DRAM bindings 0, 1, ...), which
    the entry is compiled for.

    ```mlir
    npu.program @k1_conv_relu bindings [784, 150, 96, 3456] {
      npu.load {binding = 0 : i64, row_bytes = 784 : i64}
      npu.gemm {K = 25 : i64, N = 6 : i64, T = 576 : i64, im2col, pop_prev}
    }
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$kernel, DenseI64ArrayAttr:$bindings);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$kernel `bindings` $bindings attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

/// An instruction: its fields are the op's attributes (docs/npu/isa.md).
class Npu_InstructionOp<string mnemonic, string description_>
    : Op<Npu_Dialect, mnemonic, [HasParent<"ProgramOp">]> {
  let summary = description_;
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def Npu_LoadOp : Npu_InstructionOp<"load", "DMA from DRAM into local memory (LOAD)"> {
  let description = [{
    Copies `rows` rows of `row_bytes` bytes from binding `binding` at byte
    `dram` (rows `dram_stride` apart) into local memory `memory` (0
    scratchpad, 1 parameter records, 2 lookup table) at `local` (rows
    `local_stride` apart).

    ```mlir
    npu.load {binding = 1 : i64, local = 4096 : i64, row_bytes = 32 : i64, rows = 25 : i64, dram_stride = 6 : i64, push_next}
    ```
  }];
}

def Npu_StoreOp : Npu_InstructionOp<"store", "DMA from the scratchpad into DRAM (STORE)"> {
  let description = [{
    The reverse of `npu.load`, from the scratchpad.

    ```mlir
    npu.store {binding = 3 : i64, local = 8192 : i64, row_bytes = 3456 : i64, pop_prev}
    ```
  }];
}

def Npu_GemmOp : Npu_InstructionOp<"gemm", "A product on the systolic array (GEMM)"> {
  let description = [{
    Streams `T` rows of `K` input bytes (dense rows `row_stride` apart, or
    an `im2col` view of a convolution's input tile) through `K` x `N`
    weights into accumulator rows from `acc`, overwriting or accumulating.

    ```mlir
    npu.gemm {K = 32 : i64, N = 32 : i64, T = 448 : i64, im2col, Hi = 10 : i64, Wi = 56 : i64, Ci = 64 : i64, Wo = 56 : i64, kh = 3 : i64, kw = 3 : i64}
    ```
  }];
}

def Npu_PostOp : Npu_InstructionOp<"post", "Requantization to 8 bits (POST)"> {
  let description = [{
    Accumulator rows plus each channel's bias, times its multiplier, shifted
    with rounding half to even, plus the zero point, clamped, into the
    scratchpad.

    ```mlir
    npu.post {T = 448 : i64, N = 32 : i64, output = 8192 : i64, output_stride = 64 : i64, output_unsigned, zero_point = 0 : i64, clamp_min = 0 : i64, clamp_max = 255 : i64}
    ```
  }];
}

def Npu_AddOp : Npu_InstructionOp<"add", "Sum of two quantized tensors (ADD)"> {
  let description = [{
    ONNX's quantized addition in binary32: both operands dequantized,
    added, quantized, clamped.

    ```mlir
    npu.add {a = 0 : i64, b = 4096 : i64, output = 8192 : i64, count = 4096 : i64, a_scale = 0.02 : f32, b_scale = 0.03 : f32, output_scale = 0.04 : f32}
    ```
  }];
}

def Npu_PoolOp : Npu_InstructionOp<"pool", "Max pooling on the vector unit (POOL)"> {
  let description = [{
    ```mlir
    npu.pool {Hi = 24 : i64, Wi = 24 : i64, C = 6 : i64, Ho = 12 : i64, Wo = 12 : i64, kh = 2 : i64, kw = 2 : i64, sh = 2 : i64, sw = 2 : i64, unsigned}
    ```
  }];
}

def Npu_DwConvOp : Npu_InstructionOp<"dwconv", "Depthwise convolution on the vector unit (DWCONV)"> {
  let description = [{
    ```mlir
    npu.dwconv {Hi = 14 : i64, Wi = 14 : i64, C = 96 : i64, Ho = 14 : i64, Wo = 14 : i64, kh = 3 : i64, kw = 3 : i64, pad_top = 1 : i64, pad_left = 1 : i64}
    ```
  }];
}

#endif // TESSEL_DIALECT_NPU_OPS
