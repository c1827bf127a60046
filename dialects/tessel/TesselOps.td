//===- TesselOps.td - The tessel graph dialect ----------------*- tablegen -*-===//
//
// Graph-level operations of an imported ONNX model. Every op works on ranked
// tensors with value semantics, mirrors one ONNX operator's semantics at the
// newest opset Tessel imports, and states its attributes in explicit form
// (ONNX's auto_pad, negative axes and implicit defaults are resolved by the
// importer), so that passes never re-derive ONNX rules.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_DIALECT_TESSEL_OPS
#define TESSEL_DIALECT_TESSEL_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Tessel_Dialect : Dialect {
  let name = "tessel";
  let cppNamespace = "::tessel";
  let summary = "Graph-level operations of ONNX models on tensors";
  let description = [{
    The `tessel` dialect is the form in which the compiler reasons about a
    model: one op per ONNX operator, on ranked tensors, with explicit
    attributes. Verifiers enforce the ONNX typing rules, result shapes are
    inferred from operands and attributes, and folders remove what is known
    at compile time. Passes on this dialect never know which target will run
    their output; every target lowers it through the shared
    tessel-to-linalg conversion. Quantized tensors carry MLIR's uniform
    quant types (`!quant.uniform<u8:f32, 0.02:128>`). See
    docs/dialects/tessel.md.
  }];
  let hasConstantMaterializer = 1;
  let dependentDialects = ["::mlir::quant::QuantDialect"];
}

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

/// Ops that compute each result element from the operand elements at the same
/// (broadcast) index: kernel formation lets them join their producer's
/// kernel.
def Tessel_ElementwiseMap : NativeOpTrait<"ElementwiseMap"> {
  let cppNamespace = "::tessel";
}

/// Per-axis quantized operands and results have their axis within the
/// tensor and one parameter per index of it.
def Tessel_QuantizedTypesConsistent : NativeOpTrait<"QuantizedTypesConsistent"> {
  let cppNamespace = "::tessel";
}

/// Every tessel op is a side-effect-free function of its operands.
class Tessel_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tessel_Dialect, mnemonic,
         !listconcat(traits, [Pure, Tessel_QuantizedTypesConsistent])>;

def Tessel_Tensor : RankedTensorOf<[AnyFloat, AnyInteger]>;
def Tessel_FloatTensor : RankedTensorOf<[AnyFloat]>;

/// MLIR's uniform quant types, per tensor or per axis (QuantizedTypes.h).
def Tessel_QuantizedElement
    : Type<CPred<"::tessel::isQuantized($_self)">, "uniform quantized type">;
def Tessel_QuantizedTensor : RankedTensorOf<[Tessel_QuantizedElement]>;
/// Tensors of real numbers, in floating point or quantized.
def Tessel_RealTensor : RankedTensorOf<[AnyFloat, Tessel_QuantizedElement]>;
/// Any element type, quantized ones included: for ops that move elements.
def Tessel_AnyTensor : RankedTensorOf<[AnyFloat, AnyInteger, Tessel_QuantizedElement]>;

/// Elementwise binary arithmetic with multidirectional (numpy) broadcasting.
class Tessel_BroadcastBinaryOp<string mnemonic, list<Trait> traits = []>
    : Tessel_Op<mnemonic, !listconcat(traits, [
          InferTypeOpAdaptor, Tessel_ElementwiseMap,
          AllElementTypesMatch<["lhs", "rhs", "result"]>])> {
  let arguments = (ins Tessel_Tensor:$lhs, Tessel_Tensor:$rhs);
  let results = (outs Tessel_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

/// Elementwise arithmetic with numpy broadcasting that also computes on
/// quantized tensors: then each result element is quantize(f(dequantize(
/// operands))), computed in the expressed type as ONNX's QDQ form defines it.
class Tessel_QuantizableBinaryOp<string mnemonic, list<Trait> traits = []>
    : Tessel_Op<mnemonic, !listconcat(traits, [
          InferTypeOpAdaptorWithIsCompatible, Tessel_ElementwiseMap])> {
  let arguments = (ins Tessel_AnyTensor:$lhs, Tessel_AnyTensor:$rhs);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
  let hasVerifier = 1;
}

/// Elementwise unary function on floating-point tensors.
class Tessel_UnaryFloatOp<string mnemonic, list<Trait> traits = []>
    : Tessel_Op<mnemonic, !listconcat(traits, [SameOperandsAndResultType,
                                               Tessel_ElementwiseMap])> {
  let arguments = (ins Tessel_FloatTensor:$input);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

/// A unary math function without attributes: `formula` of x, elementwise.
class Tessel_MathOp<string mnemonic, string formula, string onnxName>
    : Tessel_UnaryFloatOp<mnemonic> {
  let summary = formula # " elementwise (ONNX " # onnxName # ")";
  let description = "```mlir\n%0 = tessel." # mnemonic #
                    " %x : tensor<8xf32>\n```";
}

/// A unary activation with float parameters given as attributes.
class Tessel_ParametricActivationOp<string mnemonic, dag parameters>
    : Tessel_UnaryFloatOp<mnemonic> {
  let arguments = !con((ins Tessel_FloatTensor:$input), parameters);
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Tessel_ConstantOp : Tessel_Op<"constant", [ConstantLike]> {
  let summary = "A tensor known at compile time";
  let description = [{
    Holds an ONNX initializer or `Constant` node. Weights stay constants
    until the artifact writer places them, 64-byte aligned, in the weights
    section. A quantized constant holds its storage values; its type
    follows the arrow.

    ```mlir
    %w = tessel.constant dense<[1.0, 2.0]> : tensor<2xf32>
    %q = tessel.constant dense<[-3, 7]> : tensor<2xi8> -> tensor<2x!quant.uniform<i8:f32, 5.000000e-01>>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "attr-dict $value custom<StorageCast>(ref($value), type($result))";
  let builders = [
    OpBuilder<(ins "::mlir::ElementsAttr":$value), [{
      build($_builder, $_state, value.getType(), value);
    }]>,
  ];
  let hasFolder = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic
//===----------------------------------------------------------------------===//

def Tessel_AddOp : Tessel_QuantizableBinaryOp<"add", [Commutative]> {
  let summary = "Elementwise addition with broadcasting (ONNX Add)";
  let description = [{
    On quantized operands, quantize(dequantize(a) + dequantize(b)) to the
    result's type (residual connections of INT8 networks).

    ```mlir
    %0 = tessel.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %1 = tessel.add %p, %q : (tensor<8x!quant.uniform<u8:f32, 1.0e-01:3>>,
                              tensor<8x!quant.uniform<u8:f32, 2.0e-01:0>>)
        -> tensor<8x!quant.uniform<u8:f32, 2.5e-01:5>>
    ```
  }];
}

def Tessel_SubOp : Tessel_QuantizableBinaryOp<"sub"> {
  let summary = "Elementwise subtraction with broadcasting (ONNX Sub)";
  let description = [{
    ```mlir
    %0 = tessel.sub %a, %b : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
    ```
  }];
}

def Tessel_MulOp : Tessel_QuantizableBinaryOp<"mul", [Commutative]> {
  let summary = "Elementwise multiplication with broadcasting (ONNX Mul)";
  let description = [{
    ```mlir
    %0 = tessel.mul %a, %b : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
    ```
  }];
}

def Tessel_DivOp : Tessel_BroadcastBinaryOp<"div"> {
  let summary = "Elementwise division with broadcasting (ONNX Div)";
  let description = [{
    Integer division truncates toward zero, as in ONNX.

    ```mlir
    %0 = tessel.div %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

def Tessel_ReluOp : Tessel_Op<"relu", [SameOperandsAndResultType,
                                        Tessel_ElementwiseMap]> {
  let summary = "max(x, 0) elementwise (ONNX Relu)";
  let description = [{
    On a quantized tensor, max(x, zero point): the quantized value of 0,
    exact since quantization is monotone.

    ```mlir
    %0 = tessel.relu %x : tensor<1x64x56x56xf32>
    ```
  }];
  let arguments = (ins Tessel_RealTensor:$input);
  let results = (outs Tessel_RealTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Tessel_SigmoidOp : Tessel_UnaryFloatOp<"sigmoid"> {
  let summary = "1 / (1 + exp(-x)) elementwise (ONNX Sigmoid)";
  let description = [{
    ```mlir
    %0 = tessel.sigmoid %x : tensor<8xf32>
    ```
  }];
}

def Tessel_TanhOp : Tessel_UnaryFloatOp<"tanh"> {
  let summary = "Hyperbolic tangent elementwise (ONNX Tanh)";
  let description = [{
    ```mlir
    %0 = tessel.tanh %x : tensor<8xf32>
    ```
  }];
}

def Tessel_CompareOp : Tessel_Op<"compare", [InferTypeOpAdaptor,
    Tessel_ElementwiseMap, AllElementTypesMatch<["lhs", "rhs"]>]> {
  let summary = "Elementwise comparison with broadcasting (ONNX Equal, Less, ...)";
  let description = [{
    `predicate` is one of `eq`, `lt`, `le`, `gt`, `ge`; the result is i1.
    Floats compare ordered (a NaN operand gives false); unsigned integers
    compare unsigned.

    ```mlir
    %0 = tessel.compare lt, %a, %b : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
    ```
  }];
  let arguments = (ins StrAttr:$predicate, Tessel_Tensor:$lhs, Tessel_Tensor:$rhs);
  let results = (outs RankedTensorOf<[I1]>:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tessel_WhereOp : Tessel_Op<"where", [InferTypeOpAdaptor,
    Tessel_ElementwiseMap, AllElementTypesMatch<["on_true", "on_false", "result"]>]> {
  let summary = "Elementwise select with broadcasting (ONNX Where)";
  let description = [{
    ```mlir
    %0 = tessel.where %c, %a, %b
        : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    ```

    With `fills_past_length`, the op is the importer's fill of a value padded
    to the bound of the varying length (--max-shape): the condition holds
    exactly at the positions below the length along its one axis longer
    than 1, so `on_true` is never read past the length along that axis.
    Targets may then leave those positions of `on_true` uncomputed.
  }];
  let arguments = (ins RankedTensorOf<[I1]>:$condition, Tessel_Tensor:$on_true,
                       Tessel_Tensor:$on_false, UnitAttr:$fills_past_length);
  let results = (outs Tessel_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $on_true `,` $on_false attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

/// Boolean logic, or bitwise logic on integers, with broadcasting.
class Tessel_LogicalOp<string mnemonic, string onnxName>
    : Tessel_BroadcastBinaryOp<mnemonic> {
  let summary = "Elementwise logical or bitwise " # mnemonic #
                " with broadcasting (ONNX " # onnxName # ", Bitwise" # onnxName # ")";
  let description = "```mlir\n%0 = tessel." # mnemonic #
                    " %a, %b : (tensor<4xi1>, tensor<i1>) -> tensor<4xi1>\n```";
  let arguments = (ins RankedTensorOf<[AnyInteger]>:$lhs,
                       RankedTensorOf<[AnyInteger]>:$rhs);
  let results = (outs RankedTensorOf<[AnyInteger]>:$result);
  let hasFolder = 1;
}

def Tessel_AndOp : Tessel_LogicalOp<"and", "And">;
def Tessel_OrOp : Tessel_LogicalOp<"or", "Or">;
def Tessel_XorOp : Tessel_LogicalOp<"xor", "Xor">;

def Tessel_BitShiftOp : Tessel_BroadcastBinaryOp<"bit_shift"> {
  let summary = "Elementwise shift of unsigned integers (ONNX BitShift)";
  let description = [{
    Shifts `lhs` left (`left = true`) or right by `rhs` bits; a shift by the
    bit width or more gives 0.

    ```mlir
    %0 = tessel.bit_shift %a, %b {left = true} : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyUnsignedInteger]>:$lhs,
                       RankedTensorOf<[AnyUnsignedInteger]>:$rhs, BoolAttr:$left);
  let results = (outs RankedTensorOf<[AnyUnsignedInteger]>:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 0;
}

def Tessel_ModOp : Tessel_BroadcastBinaryOp<"mod"> {
  let summary = "Elementwise remainder with broadcasting (ONNX Mod)";
  let description = [{
    With `fmod` the remainder takes the sign of the dividend (C's fmod);
    without, that of the divisor (Python's %), which ONNX allows for
    integers only.

    ```mlir
    %0 = tessel.mod %a, %b {fmod = false} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    ```
  }];
  let arguments = (ins Tessel_Tensor:$lhs, Tessel_Tensor:$rhs, BoolAttr:$fmod);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Tessel_NotOp : Tessel_Op<"not", [SameOperandsAndResultType, Tessel_ElementwiseMap]> {
  let summary = "Elementwise logical or bitwise negation (ONNX Not, BitwiseNot)";
  let description = [{
    ```mlir
    %0 = tessel.not %a : tensor<4xi1>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyInteger]>:$input);
  let results = (outs RankedTensorOf<[AnyInteger]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
}

def Tessel_MinOp : Tessel_BroadcastBinaryOp<"min"> {
  let summary = "Elementwise minimum with broadcasting (ONNX Min)";
  let description = [{
    ONNX's variadic Min is a chain of these. A NaN operand gives NaN.

    ```mlir
    %0 = tessel.min %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
  }];
  let hasFolder = 1;
}

def Tessel_MaxOp : Tessel_BroadcastBinaryOp<"max"> {
  let summary = "Elementwise maximum with broadcasting (ONNX Max)";
  let description = [{
    ONNX's variadic Max is a chain of these. A NaN operand gives NaN.

    ```mlir
    %0 = tessel.max %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
  }];
  let hasFolder = 1;
}

def Tessel_PowOp : Tessel_BroadcastBinaryOp<"pow"> {
  let summary = "Elementwise power with broadcasting (ONNX Pow)";
  let description = [{
    Floating-point base and exponent of the same type; the importer casts
    an exponent of another type to the base's.

    ```mlir
    %0 = tessel.pow %a, %b : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    ```
  }];
  let hasFolder = 0;
  let hasVerifier = 1;
}

def Tessel_CastOp : Tessel_Op<"cast", [Tessel_ElementwiseMap]> {
  let summary = "Element type conversion (ONNX Cast, CastLike)";
  let description = [{
    Floats convert to integers by truncation toward zero, to booleans (i1) by
    comparison with zero; integers convert by sign or zero extension (by the
    source's signedness) or truncation; booleans are 0 or 1. Conversion to
    integers narrower than 8 bits keeps the low bits of the 32-bit result.

    Floats round to nearest, ties to even. A magnitude beyond the largest
    finite value of an 8-bit float becomes infinity where the format has one
    (f8E5M2) and NaN otherwise, unless `saturate` is set: then it becomes the
    largest finite value (NaN stays NaN). f4E2M1FN, which has neither, always
    saturates.

    ```mlir
    %0 = tessel.cast %x : tensor<2x3xf32> -> tensor<2x3xi64>
    %1 = tessel.cast %x {saturate} : tensor<2x3xf32> -> tensor<2x3xf8E4M3FN>
    ```
  }];
  let arguments = (ins Tessel_Tensor:$input, UnitAttr:$saturate);
  let results = (outs Tessel_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise math
//===----------------------------------------------------------------------===//

def Tessel_AbsOp : Tessel_MathOp<"abs", "|x|", "Abs">;
def Tessel_NegOp : Tessel_MathOp<"neg", "-x", "Neg">;
def Tessel_ExpOp : Tessel_MathOp<"exp", "e^x", "Exp">;
def Tessel_LogOp : Tessel_MathOp<"log", "Natural logarithm", "Log">;
def Tessel_SqrtOp : Tessel_MathOp<"sqrt", "Square root", "Sqrt">;
def Tessel_ReciprocalOp : Tessel_MathOp<"reciprocal", "1 / x", "Reciprocal">;
def Tessel_FloorOp : Tessel_MathOp<"floor", "Round toward -inf", "Floor">;
def Tessel_CeilOp : Tessel_MathOp<"ceil", "Round toward +inf", "Ceil">;
def Tessel_RoundOp : Tessel_MathOp<"round", "Round half to even", "Round">;
def Tessel_SignOp : Tessel_MathOp<"sign", "-1, 0 or 1 by the sign of x", "Sign">;
def Tessel_ErfOp : Tessel_MathOp<"erf", "Gauss error function", "Erf">;
def Tessel_SinOp : Tessel_MathOp<"sin", "Sine", "Sin">;
def Tessel_CosOp : Tessel_MathOp<"cos", "Cosine", "Cos">;
def Tessel_TanOp : Tessel_MathOp<"tan", "Tangent", "Tan">;
def Tessel_AsinOp : Tessel_MathOp<"asin", "Arcsine", "Asin">;
def Tessel_AcosOp : Tessel_MathOp<"acos", "Arccosine", "Acos">;
def Tessel_AtanOp : Tessel_MathOp<"atan", "Arctangent", "Atan">;
def Tessel_SinhOp : Tessel_MathOp<"sinh", "Hyperbolic sine", "Sinh">;
def Tessel_CoshOp : Tessel_MathOp<"cosh", "Hyperbolic cosine", "Cosh">;
def Tessel_AsinhOp : Tessel_MathOp<"asinh", "Inverse hyperbolic sine", "Asinh">;
def Tessel_AcoshOp : Tessel_MathOp<"acosh", "Inverse hyperbolic cosine", "Acosh">;
def Tessel_AtanhOp : Tessel_MathOp<"atanh", "Inverse hyperbolic tangent", "Atanh">;
def Tessel_SoftplusOp : Tessel_MathOp<"softplus", "log(1 + e^x)", "Softplus">;
def Tessel_SoftsignOp : Tessel_MathOp<"softsign", "x / (1 + |x|)", "Softsign">;
def Tessel_HardSwishOp
    : Tessel_MathOp<"hard_swish", "x * max(0, min(1, x / 6 + 1/2))", "HardSwish">;
def Tessel_MishOp : Tessel_MathOp<"mish", "x * tanh(log(1 + e^x))", "Mish">;

//===----------------------------------------------------------------------===//
// Activations with parameters
//===----------------------------------------------------------------------===//

def Tessel_LeakyReluOp : Tessel_ParametricActivationOp<"leaky_relu",
    (ins F32Attr:$alpha)> {
  let summary = "x if x >= 0, else alpha * x (ONNX LeakyRelu)";
  let description = [{
    ```mlir
    %0 = tessel.leaky_relu %x {alpha = 1.000000e-01 : f32} : tensor<8xf32>
    ```
  }];
}

def Tessel_EluOp : Tessel_ParametricActivationOp<"elu", (ins F32Attr:$alpha)> {
  let summary = "x if x >= 0, else alpha * (e^x - 1) (ONNX Elu)";
  let description = [{
    ```mlir
    %0 = tessel.elu %x {alpha = 1.000000e+00 : f32} : tensor<8xf32>
    ```
  }];
}

def Tessel_SeluOp : Tessel_ParametricActivationOp<"selu",
    (ins F32Attr:$alpha, F32Attr:$gamma)> {
  let summary = "gamma * (x if x > 0, else alpha * (e^x - 1)) (ONNX Selu)";
  let description = [{
    ```mlir
    %0 = tessel.selu %x {alpha = 1.67326319 : f32, gamma = 1.05070102 : f32}
        : tensor<8xf32>
    ```
  }];
}

def Tessel_CeluOp : Tessel_ParametricActivationOp<"celu", (ins F32Attr:$alpha)> {
  let summary = "max(0, x) + min(0, alpha * (e^(x / alpha) - 1)) (ONNX Celu)";
  let description = [{
    ```mlir
    %0 = tessel.celu %x {alpha = 2.000000e+00 : f32} : tensor<8xf32>
    ```
  }];
  let hasVerifier = 1;
}

def Tessel_HardSigmoidOp : Tessel_ParametricActivationOp<"hard_sigmoid",
    (ins F32Attr:$alpha, F32Attr:$beta)> {
  let summary = "max(0, min(1, alpha * x + beta)) (ONNX HardSigmoid)";
  let description = [{
    ```mlir
    %0 = tessel.hard_sigmoid %x {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32}
        : tensor<8xf32>
    ```
  }];
}

def Tessel_ThresholdedReluOp : Tessel_ParametricActivationOp<"thresholded_relu",
    (ins F32Attr:$alpha)> {
  let summary = "x if x > alpha, else 0 (ONNX ThresholdedRelu)";
  let description = [{
    ```mlir
    %0 = tessel.thresholded_relu %x {alpha = 1.000000e+00 : f32} : tensor<8xf32>
    ```
  }];
}

def Tessel_GeluOp : Tessel_ParametricActivationOp<"gelu", (ins BoolAttr:$tanh)> {
  let summary = "x * Phi(x), exactly or with tanh (ONNX Gelu)";
  let description = [{
    Phi is the standard normal CDF, 0.5 * (1 + erf(x / sqrt(2))); with `tanh`
    (ONNX approximate = "tanh") it is approximated by
    0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))).

    ```mlir
    %0 = tessel.gelu %x {tanh = false} : tensor<8xf32>
    ```
  }];
}

def Tessel_ClipOp : Tessel_Op<"clip", [AttrSizedOperandSegments,
    Tessel_ElementwiseMap, AllTypesMatch<["input", "result"]>]> {
  let summary = "Clamp into [min, max] elementwise (ONNX Clip)";
  let description = [{
    Either bound may be absent. Bounds are scalar (rank-0) tensors of the
    input's element type, constants or not; opset-6 attributes become
    constants at import. A quantized tensor is clamped by quantized bounds
    of its own type, exactly, since quantization is monotone.

    ```mlir
    %0 = tessel.clip %x min(%zero : tensor<f32>) max(%six : tensor<f32>) : tensor<1x32x112x112xf32>
    ```
  }];
  let arguments = (ins Tessel_AnyTensor:$input, Optional<Tessel_AnyTensor>:$min,
                       Optional<Tessel_AnyTensor>:$max);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = [{
    $input (`min` `(` $min^ `:` type($min) `)`)? (`max` `(` $max^ `:` type($max) `)`)?
        attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Tessel_MatMulOp : Tessel_Op<"matmul", [InferTypeOpAdaptorWithIsCompatible]> {
  let summary = "Matrix product with numpy semantics (ONNX MatMul, QLinearMatMul)";
  let description = [{
    1-D operands are promoted to matrices and the promoted dimension is
    removed from the result; leading (batch) dimensions broadcast.

    Quantized (8-bit operands, `rhs` per tensor or per column): the product
    of the zero-point-centred storage values accumulates exactly in i32.
    An i32 result is that accumulator (its scale lhs x rhs, zero point 0);
    an 8-bit result is the accumulator times lhs_scale * rhs_scale /
    result_scale (computed in the expressed type), rounded half to even,
    plus the result's zero point, saturated: ONNX's QLinearMatMul.

    ```mlir
    %0 = tessel.matmul %a, %b : (tensor<2x8x16xf32>, tensor<16x4xf32>) -> tensor<2x8x4xf32>
    %1 = tessel.matmul %p, %q : (tensor<8x16x!quant.uniform<u8:f32, 0.1:128>>,
                                 tensor<16x4x!quant.uniform<i8:f32, 0.02>>)
        -> tensor<8x4x!quant.uniform<u8:f32, 0.5:10>>
    ```
  }];
  let arguments = (ins Tessel_RealTensor:$lhs, Tessel_RealTensor:$rhs);
  let results = (outs Tessel_RealTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tessel_GemmOp : Tessel_Op<"gemm", [InferTypeOpAdaptorWithIsCompatible]> {
  let summary = "alpha * op(A) * op(B) + beta * C (ONNX Gemm)";
  let description = [{
    `op(X)` transposes X when the matching `trans_*` flag is set. C is
    optional and unidirectionally broadcast to the result. A constant B with
    `trans_b` is transposed at compile time (canonicalization), so that the
    kernels stream its rows.

    Quantized, alpha and beta are 1, B may be quantized per column of op(B),
    and C is the i32 bias of a quantized matmul, added to the accumulator.

    ```mlir
    %0 = tessel.gemm %a, %b, %c {trans_b = true}
        : (tensor<1x512xf32>, tensor<1000x512xf32>, tensor<1000xf32>) -> tensor<1x1000xf32>
    ```
  }];
  let arguments = (ins Tessel_RealTensor:$a, Tessel_RealTensor:$b,
                       Optional<Tessel_RealTensor>:$c,
                       DefaultValuedAttr<F32Attr, "1.0f">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0f">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_b);
  let results = (outs Tessel_RealTensor:$result);
  let assemblyFormat = [{
    $a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

def Tessel_ConvOp : Tessel_Op<"conv", [InferTypeOpAdaptorWithIsCompatible]> {
  let summary = "Grouped N-d convolution in NC[spatial] layout (ONNX Conv, QLinearConv)";
  let description = [{
    `pads` holds the begin pads of every spatial axis followed by the end
    pads (ONNX order); `auto_pad` has already been resolved into it. The
    weight is laid out as [F, C / group, k...].

    With `channels_last` (chosen by the layout pass, never imported) the
    input and the result are [N, spatial..., C] and the weight is
    [k..., C / group, F], so that targets vectorize along the channels.

    Quantized (8-bit input and weight, the weight per tensor or per filter,
    an optional i32 bias of scale input x weight): as tessel.matmul, the
    convolution of the zero-point-centred values plus the bias accumulates
    in i32, then is requantized to an 8-bit result or kept as an i32 one
    (ONNX's QLinearConv and ConvInteger). Padding holds the input's zero
    point.

    ```mlir
    %0 = tessel.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64,
                                 pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
        : (tensor<1x3x32x32xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x8x32x32xf32>
    ```
  }];
  let arguments = (ins Tessel_RealTensor:$input, Tessel_RealTensor:$weight,
                       Optional<Tessel_RealTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       ConfinedAttr<I64Attr, [IntPositive]>:$group,
                       UnitAttr:$channels_last);
  let results = (outs Tessel_RealTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

class Tessel_PoolOp<string mnemonic>
    : Tessel_Op<mnemonic, [InferTypeOpAdaptorWithIsCompatible]> {
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_MaxPoolOp : Tessel_PoolOp<"max_pool"> {
  let summary = "N-d max pooling over windows (ONNX MaxPool)";
  let description = [{
    Padding never wins the maximum. With `ceil_mode`, the last window of an
    axis may start inside the input and end past it. With `channels_last`
    the input and the result are [N, spatial..., C]. A quantized input
    keeps its type: the maximum of quantized values is exact.

    ```mlir
    %0 = tessel.max_pool %x {ceil_mode = false, dilations = array<i64: 1, 1>,
                             kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>,
                             strides = array<i64: 2, 2>}
        : (tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32>
    ```
  }];
  let arguments = (ins Tessel_AnyTensor:$input, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, BoolAttr:$ceil_mode,
                       UnitAttr:$channels_last);
}

def Tessel_MaxPoolIndicesOp : Tessel_PoolOp<"max_pool_indices"> {
  let summary = "Where each max pooling window has its maximum (ONNX MaxPool's Indices)";
  let description = [{
    The window geometry of `tessel.max_pool`; each result is the flat index
    into the input of the window's first largest element (padding never
    counts): (n * C + c) * spatial size + the spatial offset, row-major, or
    column-major over the spatial axes with `column_major`.

    ```mlir
    %0 = tessel.max_pool_indices %x {ceil_mode = false, column_major = false,
                                     dilations = array<i64: 1, 1>,
                                     kernel_shape = array<i64: 2, 2>,
                                     pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
        : (tensor<1x3x4x4xf32>) -> tensor<1x3x2x2xi64>
    ```
  }];
  let arguments = (ins Tessel_Tensor:$input, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, BoolAttr:$ceil_mode,
                       BoolAttr:$column_major);
}

def Tessel_AveragePoolOp : Tessel_PoolOp<"average_pool"> {
  let summary = "N-d average pooling over windows (ONNX AveragePool)";
  let description = [{
    With `count_include_pad`, explicit padding counts in the divisor;
    positions that `ceil_mode` adds past the padded input never count. With
    `channels_last` the input and the result are [N, spatial..., C].
    Quantized, the average of the dequantized window is quantized to the
    result's type, in the expressed type.

    ```mlir
    %0 = tessel.average_pool %x {ceil_mode = false, count_include_pad = false,
                                 dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>,
                                 pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
        : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
    ```
  }];
  let arguments = (ins Tessel_RealTensor:$input, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, BoolAttr:$ceil_mode,
                       BoolAttr:$count_include_pad, UnitAttr:$channels_last);
}

def Tessel_GlobalAveragePoolOp : Tessel_Op<"global_average_pool", [
    InferTypeOpAdaptorWithIsCompatible]> {
  let summary = "Mean over all spatial axes (ONNX GlobalAveragePool)";
  let description = [{
    With `channels_last` the input is [N, spatial..., C] and the result
    [N, 1..., C]. Quantized, as tessel.average_pool.

    ```mlir
    %0 = tessel.global_average_pool %x : (tensor<1x512x7x7xf32>) -> tensor<1x512x1x1xf32>
    ```
  }];
  let arguments = (ins Tessel_RealTensor:$input, UnitAttr:$channels_last);
  let results = (outs Tessel_RealTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_BatchNormOp : Tessel_Op<"batch_norm", [Tessel_ElementwiseMap,
    AllTypesMatch<["input", "result"]>,
    AllTypesMatch<["scale", "bias", "mean", "variance"]>]> {
  let summary = "Inference-mode batch normalization (ONNX BatchNormalization)";
  let description = [{
    y = (x - mean) * scale / sqrt(variance + epsilon) + bias, per channel
    (axis 1). Folded into a preceding convolution when its parameters are
    constant (`tessel-fold-batch-norm`).

    ```mlir
    %0 = tessel.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.0e-05 : f32}
        : tensor<1x64x56x56xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Tessel_FloatTensor:$input, Tessel_FloatTensor:$scale,
                       Tessel_FloatTensor:$bias, Tessel_FloatTensor:$mean,
                       Tessel_FloatTensor:$variance, F32Attr:$epsilon);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $variance attr-dict `:`
        type($input) `,` type($scale)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalization of distributions
//===----------------------------------------------------------------------===//

def Tessel_LayerNormOp : Tessel_Op<"layer_norm", [AllTypesMatch<["input", "result"]>]> {
  let summary = "Normalization over the last axis, scaled and shifted (ONNX LayerNormalization)";
  let description = [{
    (x - mean) / sqrt(variance + epsilon) * scale + bias, the statistics
    taken over the last axis of an f32 input; `scale` and `bias` are vectors
    along that axis. One op, so that kernel formation keeps a normalization
    in one kernel; the importer emits it for the common form (the last axis,
    f32 statistics, only the normalized output used) and decomposes the
    others.

    ```mlir
    %0 = tessel.layer_norm %x, %scale, %bias {epsilon = 9.99999974E-6 : f32}
        : (tensor<1x128x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<1x128x768xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$input, RankedTensorOf<[F32]>:$scale,
                       Optional<RankedTensorOf<[F32]>>:$bias, F32Attr:$epsilon);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tessel_SoftmaxOp : Tessel_Op<"softmax", [SameOperandsAndResultType]> {
  let summary = "exp(x) / sum(exp(x)) along one axis (ONNX Softmax, opset 13)";
  let description = [{
    `axis` is non-negative. Opset 1-12 models, whose softmax flattens the
    trailing axes, are imported as reshape + softmax + reshape.

    ```mlir
    %0 = tessel.softmax %x {axis = 1 : i64} : tensor<1x1000xf32>
    ```
  }];
  let arguments = (ins Tessel_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def Tessel_ReduceOp : Tessel_Op<"reduce", [InferTypeOpAdaptor,
    AllElementTypesMatch<["input", "result"]>]> {
  let summary = "Sum, product, maximum or minimum over some axes (ONNX Reduce*)";
  let description = [{
    `kind` is `sum`, `prod`, `max` or `min`; `axes` are distinct and
    non-negative, and the reduced axes are dropped from the result (the
    importer reshapes for ONNX's keepdims). ReduceMean, ReduceL1, ReduceL2,
    ReduceLogSum, ReduceLogSumExp and ReduceSumSquare are imported as
    elementwise maps around a sum or a max. Reducing no axes is the identity.

    ```mlir
    %0 = tessel.reduce sum, %x {axes = array<i64: 1>}
        : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins StrAttr:$kind, Tessel_Tensor:$input,
                       DenseI64ArrayAttr:$axes);
  let results = (outs Tessel_Tensor:$result);
  let assemblyFormat = [{
    $kind `,` $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tessel_ArgReduceOp : Tessel_Op<"arg_reduce", [InferTypeOpAdaptor]> {
  let summary = "Index of the maximum or minimum along one axis (ONNX ArgMax, ArgMin)";
  let description = [{
    `kind` is `max` or `min`. Ties give the first index, or the last with
    `select_last`. The axis is dropped from the i64 result.

    ```mlir
    %0 = tessel.arg_reduce max, %x {axis = 1 : i64, select_last = false}
        : (tensor<2x3xf32>) -> tensor<2xi64>
    ```
  }];
  let arguments = (ins StrAttr:$kind, Tessel_Tensor:$input, I64Attr:$axis,
                       BoolAttr:$select_last);
  let results = (outs RankedTensorOf<[I64]>:$result);
  let assemblyFormat = [{
    $kind `,` $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Tessel_FlattenOp : Tessel_Op<"flatten", [InferTypeOpAdaptor]> {
  let summary = "Collapse into a matrix at `axis` (ONNX Flatten)";
  let description = [{
    The result is [prod(dims[:axis]), prod(dims[axis:])]. Canonicalizes to
    `tessel.reshape`.

    ```mlir
    %0 = tessel.flatten %x {axis = 1 : i64} : (tensor<1x512x1x1xf32>) -> tensor<1x512xf32>
    ```
  }];
  let arguments = (ins Tessel_AnyTensor:$input, I64Attr:$axis);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasCanonicalizeMethod = 1;
}

def Tessel_ReshapeOp : Tessel_Op<"reshape", [AllElementTypesMatch<["input", "result"]>]> {
  let summary = "Same elements in row-major order, new shape (ONNX Reshape)";
  let description = [{
    The result type is the new shape; the importer resolves ONNX's 0 and -1
    entries. A reshape is a view: the memory planner gives its result the
    storage of its operand.

    ```mlir
    %0 = tessel.reshape %x : tensor<1x512x1x1xf32> -> tensor<1x512xf32>
    ```
  }];
  let arguments = (ins Tessel_AnyTensor:$input);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tessel_TransposeOp : Tessel_Op<"transpose", [InferTypeOpAdaptor]> {
  let summary = "Permute the axes (ONNX Transpose)";
  let description = [{
    Result axis i is operand axis perm[i].

    ```mlir
    %0 = tessel.transpose %x {perm = array<i64: 0, 2, 3, 1>}
        : (tensor<1x3x4x5xf32>) -> tensor<1x4x5x3xf32>
    ```
  }];
  let arguments = (ins Tessel_AnyTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Tessel_BitCastOp : Tessel_Op<"bitcast", [Tessel_ElementwiseMap]> {
  let summary = "Reinterpret each element's bits as another type (ONNX BitCast)";
  let description = [{
    Both element types have the same bit width; booleans are 8-bit values
    that hold 0 or 1. Between a quantized type and its storage integer, the
    values are the stored ones (the importer types ONNX's integer tensors
    this way when they feed quantized ops).

    ```mlir
    %0 = tessel.bitcast %x : tensor<4xf32> -> tensor<4xi32>
    ```
  }];
  let arguments = (ins Tessel_AnyTensor:$input);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tessel_ExpandOp : Tessel_Op<"expand", [Tessel_ElementwiseMap,
    AllElementTypesMatch<["input", "result"]>]> {
  let summary = "Broadcast to a larger shape (ONNX Expand)";
  let description = [{
    The result type is the broadcast of the input's shape with ONNX's shape
    operand, which the importer resolves.

    ```mlir
    %0 = tessel.expand %x : tensor<3x1xf32> -> tensor<2x3x4xf32>
    ```
  }];
  let arguments = (ins Tessel_AnyTensor:$input);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Tessel_SliceOp : Tessel_Op<"slice", [AllElementTypesMatch<["input", "result"]>]> {
  let summary = "Strided window of a tensor (ONNX Slice, Split)";
  let description = [{
    result[i] = input[starts + i * steps] on every axis; steps may be
    negative. The importer resolves ONNX's axes, clamping and negative
    indices; the result type gives the extent of each axis.

    ```mlir
    %0 = tessel.slice %x {starts = array<i64: 0, 3>, steps = array<i64: 1, -1>}
        : tensor<4x4xf32> -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins Tessel_AnyTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$steps);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Tessel_GatherOp : Tessel_Op<"gather", [InferTypeOpAdaptor,
    AllElementTypesMatch<["data", "result"]>]> {
  let summary = "Pick slices along an axis by index (ONNX Gather)";
  let description = [{
    result[p..., j..., q...] = data[p..., indices[j...], q...] where `axis`
    is the indexed axis of `data`. Negative indices count from the end.

    ```mlir
    %0 = tessel.gather %data, %indices {axis = 0 : i64}
        : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
    ```
  }];
  let arguments = (ins Tessel_AnyTensor:$data, RankedTensorOf<[I32, I64]>:$indices,
                       I64Attr:$axis);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Tessel_GatherElementsOp : Tessel_Op<"gather_elements", [
    AllElementTypesMatch<["data", "result"]>, AllShapesMatch<["indices", "result"]>]> {
  let summary = "Pick elements along an axis by index (ONNX GatherElements)";
  let description = [{
    result[i] = data[i with its `axis` entry replaced by indices[i]].

    ```mlir
    %0 = tessel.gather_elements %data, %indices {axis = 1 : i64}
        : (tensor<2x2xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Tessel_Tensor:$data, RankedTensorOf<[I32, I64]>:$indices,
                       I64Attr:$axis);
  let results = (outs Tessel_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_PadOp : Tessel_Op<"pad", [InferTypeOpAdaptor,
    AllElementTypesMatch<["input", "value", "result"]>]> {
  let summary = "Pad every axis (ONNX Pad)";
  let description = [{
    `pads` holds the leading pads of every axis, then the trailing ones
    (negative pads crop). `mode` is `constant` (with the scalar `value`),
    `reflect`, `edge` or `wrap`.

    ```mlir
    %0 = tessel.pad %x, %zero {mode = "constant", pads = array<i64: 0, 1, 0, 1>}
        : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x5xf32>
    ```
  }];
  let arguments = (ins Tessel_AnyTensor:$input, Tessel_AnyTensor:$value,
                       DenseI64ArrayAttr:$pads, StrAttr:$mode);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$input `,` $value attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

/// A running sum or product along an axis.
class Tessel_CumulativeOp<string mnemonic, string onnxName>
    : Tessel_Op<mnemonic, [SameOperandsAndResultType]> {
  let summary = "Running " # !if(!eq(mnemonic, "cumsum"), "sum", "product") #
                " along an axis (ONNX " # onnxName # ")";
  let description = "`exclusive` leaves out each element itself; `reverse` runs from " #
      "the end.\n\n```mlir\n%0 = tessel." # mnemonic #
      " %x {axis = 0 : i64, exclusive = false, reverse = false} : tensor<5xf32>\n```";
  let arguments = (ins Tessel_Tensor:$input, I64Attr:$axis, BoolAttr:$exclusive,
                       BoolAttr:$reverse);
  let results = (outs Tessel_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Tessel_CumSumOp : Tessel_CumulativeOp<"cumsum", "CumSum">;
def Tessel_CumProdOp : Tessel_CumulativeOp<"cumprod", "CumProd">;

def Tessel_ScatterElementsOp : Tessel_Op<"scatter_elements", [
    AllTypesMatch<["data", "result"]>, AllElementTypesMatch<["data", "updates"]>,
    AllShapesMatch<["indices", "updates"]>]> {
  let summary = "Write updates at indexed positions along an axis (ONNX ScatterElements)";
  let description = [{
    result = data, then for every index u of `updates`, the element at u
    with its `axis` entry replaced by indices[u] becomes updates[u]
    (`reduction` "none"; later updates win) or combines with it ("add",
    "mul", "max", "min").

    ```mlir
    %0 = tessel.scatter_elements %data, %indices, %updates {axis = 1 : i64, reduction = "none"}
        : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
    ```
  }];
  let arguments = (ins Tessel_Tensor:$data, RankedTensorOf<[I32, I64]>:$indices,
                       Tessel_Tensor:$updates, I64Attr:$axis, StrAttr:$reduction);
  let results = (outs Tessel_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `,` $updates attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tessel_ScatterNDOp : Tessel_Op<"scatter_nd", [
    AllTypesMatch<["data", "result"]>, AllElementTypesMatch<["data", "updates"]>]> {
  let summary = "Write slices at indexed positions (ONNX ScatterND)";
  let description = [{
    indices is [u..., k]: each tuple indexes the first k axes of `data`, and
    updates[u...] (the rest of the axes) is written there, or combined as
    `reduction` says.

    ```mlir
    %0 = tessel.scatter_nd %data, %indices, %updates {reduction = "add"}
        : (tensor<4x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Tessel_Tensor:$data, RankedTensorOf<[I64]>:$indices,
                       Tessel_Tensor:$updates, StrAttr:$reduction);
  let results = (outs Tessel_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `,` $updates attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tessel_CountOutOfRangeOp : Tessel_Op<"count_out_of_range"> {
  let summary = "Count the indices that lie outside the axes they index";
  let description = [{
    The number of elements i of `indices` (row-major) outside [-e, e),
    where e = extents[i mod size(extents)]: one extent when every index
    addresses one axis (Gather, GatherElements, ScatterElements), one per
    tuple entry (the innermost axis of GatherND and ScatterND indices).
    The importer guards every index read at run time with one, whose count
    a `tessel.check_zero` in the entry function tests.

    ```mlir
    %0 = tessel.count_out_of_range %indices {extents = array<i64: 5>}
        : tensor<2x3xi64> -> tensor<i64>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I32, I64]>:$indices, DenseI64ArrayAttr:$extents);
  let results = (outs 0DTensorOf<[I64]>:$count);
  let assemblyFormat = "$indices attr-dict `:` type($indices) `->` type($count)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

// Not a Tessel_Op: it is not pure, since ending the run is its purpose.
def Tessel_CheckZeroOp : Op<Tessel_Dialect, "check_zero"> {
  let summary = "End the run with an error naming a node when a count is not zero";
  let description = [{
    A host-side check that stays in the entry function: the runtime reads
    `count` once the steps before it have run and, unless it is zero, stops
    the run with an error that names ONNX node `node` and says `problem`
    (the count is prefixed). Kernels never see it.

    ```mlir
    tessel.check_zero %0 {node = "embed", problem = "Gather indices outside [-5, 5)"}
        : tensor<i64>
    ```
  }];
  let arguments = (ins 0DTensorOf<[I64]>:$count, StrAttr:$node, StrAttr:$problem);
  let assemblyFormat = "$count attr-dict `:` type($count)";
  let hasCanonicalizeMethod = 1;
}

def Tessel_EinsumOp : Tessel_Op<"einsum"> {
  let summary = "Sum of products over named axes (ONNX Einsum)";
  let description = [{
    `equation` is explicit ("ij,jk->ik"), one lowercase or uppercase letter
    per axis and no ellipsis: the importer expands ONNX's implicit outputs
    and "...". Letters missing from the output are summed over.

    ```mlir
    %0 = tessel.einsum %a, %b {equation = "ij,jk->ik"}
        : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins Variadic<Tessel_Tensor>:$inputs, StrAttr:$equation);
  let results = (outs Tessel_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tessel_ConcatOp : Tessel_Op<"concat", [InferTypeOpAdaptor]> {
  let summary = "Join tensors along one axis (ONNX Concat)";
  let description = [{
    ```mlir
    %0 = tessel.concat %a, %b {axis = 1 : i64}
        : (tensor<1x2xf32>, tensor<1x3xf32>) -> tensor<1x5xf32>
    ```
  }];
  let arguments = (ins Variadic<Tessel_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs Tessel_AnyTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Recurrence
//===----------------------------------------------------------------------===//

def Tessel_ScanOp : Tessel_Op<"scan", [IsolatedFromAbove, AttrSizedOperandSegments,
    SingleBlock]> {
  let summary = "A step function applied along the leading axis (LSTM, GRU, RNN)";
  let description = [{
    The body computes one step: from the `invariants` (weights, the same at
    every step), the current `states` and step t's slice of each `scanned`
    tensor (its leading axis of length T dropped), it yields the next
    states. The result stacks every step's states: result[t, s] is state s
    after step t, so all states share one type. With `reverse`, the steps
    run from t = T - 1 down to 0, each still stored at its own t.

    It stays one op, and one kernel, so that a target runs the steps as a
    loop with the states in cache instead of a kernel per step.

    An optional `length` (a 0-d i64 tensor) says that the steps from
    t = length on leave the states as they are: the body sees to it, as a
    recurrence's mask of its sequence lengths does. A target may then stop
    there (in reverse, start at t = length - 1), the result's rows for the
    steps skipped repeating the states as they stand; one that runs every
    step computes the same result.

    ```mlir
    %y = tessel.scan invariants(%r) states(%h0) scanned(%x)
        : (tensor<8x8xf32>, tensor<1x8xf32>, tensor<5x1x8xf32>) -> tensor<5x1x1x8xf32> {
    ^bb0(%rt: tensor<8x8xf32>, %h: tensor<1x8xf32>, %xt: tensor<1x8xf32>):
      %p = tessel.matmul %h, %rt : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
      %s = tessel.add %xt, %p : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
      %n = tessel.tanh %s : tensor<1x8xf32>
      tessel.yield %n : tensor<1x8xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Tessel_Tensor>:$invariants,
                       Variadic<Tessel_Tensor>:$states,
                       Variadic<Tessel_Tensor>:$scanned,
                       Optional<Tessel_Tensor>:$length,
                       UnitAttr:$reverse);
  let results = (outs Tessel_Tensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`reverse` $reverse^)? `invariants` `(` $invariants `)` `states` `(` $states `)`
    `scanned` `(` $scanned `)` (`length` `(` $length^ `)`)? attr-dict `:`
    functional-type(operands, results) $body
  }];
  let extraClassDeclaration = [{
    /// The number of steps: the scanned tensors' leading extent.
    int64_t getSteps() { return getType().getDimSize(0); }
  }];
  let hasVerifier = 1;
}

def Tessel_LoopOp : Tessel_Op<"loop", [IsolatedFromAbove, AttrSizedOperandSegments,
    SingleBlock]> {
  let summary = "A body run a number of times known when the model runs (ONNX Loop)";
  let description = [{
    The body runs `trip_count` times (none when it is not positive), from
    the iteration number i (a 0-d i64 tensor: 0, 1, ...), the `invariants`
    and the current `states`, and yields the next states. A `conditional`
    body yields first a 0-d i1 tensor, and the loop stops early after an
    iteration that yields false (ONNX Loop's condition). The result stacks
    the final states: result[s] is state s after the last iteration (the
    initial one when none runs), so all states share one type. A target
    runs it as a loop whose trip count it reads at run time.

    ```mlir
    %final = tessel.loop trip_count(%m) invariants(%step) states(%acc0)
        : (tensor<i64>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3xf32> {
    ^bb0(%i: tensor<i64>, %d: tensor<3xf32>, %acc: tensor<3xf32>):
      %next = tessel.add %acc, %d : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      tessel.yield %next : tensor<3xf32>
    }
    ```
  }];
  let arguments = (ins Tessel_Tensor:$trip_count,
                       Variadic<Tessel_Tensor>:$invariants,
                       Variadic<Tessel_Tensor>:$states,
                       UnitAttr:$conditional);
  let results = (outs Tessel_Tensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`conditional` $conditional^)? `trip_count` `(` $trip_count `)` `invariants` `(` $invariants `)` `states` `(` $states `)`
    attr-dict `:` functional-type(operands, results) $body
  }];
  let hasVerifier = 1;
}

def Tessel_YieldOp : Op<Tessel_Dialect, "yield", [Pure, Terminator,
    ParentOneOf<["::tessel::ScanOp", "::tessel::LoopOp"]>]> {
  let summary = "The next states of a scan's step or a loop's iteration";
  let arguments = (ins Variadic<Tessel_Tensor>:$states);
  let assemblyFormat = "$states attr-dict `:` type($states)";
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

def Tessel_QuantizeOp : Tessel_Op<"quantize", [Tessel_ElementwiseMap,
    SameOperandsAndResultShape]> {
  let summary = "Real numbers to quantized ones (ONNX QuantizeLinear)";
  let description = [{
    q = saturate(round_half_even(x / scale) + zero_point) with the
    parameters of the result's type, the division in the expressed type as
    ONNX computes it (not a multiplication by the reciprocal). A per-axis
    type quantizes each slice along its axis with the slice's parameters.

    ```mlir
    %0 = tessel.quantize %x : tensor<4xf32> -> tensor<4x!quant.uniform<u8:f32, 0.1:128>>
    ```
  }];
  let arguments = (ins Tessel_FloatTensor:$input);
  let results = (outs Tessel_QuantizedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tessel_DequantizeOp : Tessel_Op<"dequantize", [Tessel_ElementwiseMap,
    SameOperandsAndResultShape]> {
  let summary = "Quantized numbers to real ones (ONNX DequantizeLinear)";
  let description = [{
    x = (q - zero_point) * scale, in the expressed type, the result's
    element type.

    ```mlir
    %0 = tessel.dequantize %q : tensor<4x!quant.uniform<u8:f32, 0.1:128>> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Tessel_QuantizedTensor:$input);
  let results = (outs Tessel_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tessel_RequantizeOp : Tessel_Op<"requantize", [Tessel_ElementwiseMap,
    SameOperandsAndResultShape]> {
  let summary = "Quantized numbers to another quantization";
  let description = [{
    tessel.quantize of tessel.dequantize, computed as the two would be: the
    form of a DequantizeLinear and QuantizeLinear pair of different
    parameters around an op that moves elements (a concatenation, a max
    pooling).

    ```mlir
    %0 = tessel.requantize %q : tensor<4x!quant.uniform<u8:f32, 0.1:128>>
        -> tensor<4x!quant.uniform<i8:f32, 0.2:-3>>
    ```
  }];
  let arguments = (ins Tessel_QuantizedTensor:$input);
  let results = (outs Tessel_QuantizedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tessel_LookupOp : Tessel_Op<"lookup", [Tessel_ElementwiseMap]> {
  let summary = "A function of one 8-bit quantized tensor, as a table";
  let description = [{
    result[i] = table[storage(input[i]) - storage minimum]: the table holds
    the result of every value the input's 8-bit storage can take. Quantized
    activations (sigmoid, SiLU, GELU, any chain of elementwise ops between a
    dequantization and a quantization) become one table, computed at
    compile time, instead of float arithmetic per element.

    ```mlir
    %0 = tessel.lookup %x, %table
        : (tensor<64x!quant.uniform<u8:f32, 0.1:128>>, tensor<256x!quant.uniform<u8:f32, 0.004>>)
        -> tensor<64x!quant.uniform<u8:f32, 0.004>>
    ```
  }];
  let arguments = (ins Tessel_QuantizedTensor:$input, Tessel_QuantizedTensor:$table);
  let results = (outs Tessel_QuantizedTensor:$result);
  let assemblyFormat = [{
    $input `,` $table attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // TESSEL_DIALECT_TESSEL_OPS
