//===- Handlers.h - Registration of the ONNX op handlers --------*- C++ -*-===//

#ifndef TESSEL_COMPILER_ONNX_OPS_HANDLERS_H
#define TESSEL_COMPILER_ONNX_OPS_HANDLERS_H

#include "compiler/onnx/NodeImporter.h"

namespace tessel::onnx_import {

// One function per op family, each in the file of the same name.
void registerAttentionHandlers(OpRegistry &registry);
void registerDeformConvHandlers(OpRegistry &registry);
void registerDeterminantHandlers(OpRegistry &registry);
void registerElementwiseHandlers(OpRegistry &registry);
void registerGatherScatterHandlers(OpRegistry &registry);
void registerGridSampleHandlers(OpRegistry &registry);
void registerLinearAttentionHandlers(OpRegistry &registry);
void registerLinearMapHandlers(OpRegistry &registry);
void registerLossHandlers(OpRegistry &registry);
void registerMachineLearningHandlers(OpRegistry &registry);
void registerMelWeightMatrixHandlers(OpRegistry &registry);
void registerNeuralNetworkHandlers(OpRegistry &registry);
void registerNonMaxSuppressionHandlers(OpRegistry &registry);
void registerNormalizationHandlers(OpRegistry &registry);
void registerRecurrentHandlers(OpRegistry &registry);
void registerQuantizationHandlers(OpRegistry &registry);
void registerReductionHandlers(OpRegistry &registry);
void registerResizeHandlers(OpRegistry &registry);
void registerRoiAlignHandlers(OpRegistry &registry);
void registerSequenceHandlers(OpRegistry &registry);
void registerShapeHandlers(OpRegistry &registry);
void registerSlicingHandlers(OpRegistry &registry);
void registerTensorHandlers(OpRegistry &registry);
void registerTfIdfVectorizerHandlers(OpRegistry &registry);
void registerTrainingOptimizerHandlers(OpRegistry &registry);
void registerTreeEnsembleHandlers(OpRegistry &registry);
void registerUniqueHandlers(OpRegistry &registry);

/// `value` with elements of type `element`: itself when it has them, else
/// a tessel.cast (rounding to nearest, not saturating; Tensor.cpp).
mlir::Value convertElements(NodeImporter &node, mlir::Value value, mlir::Type element);

/// x * sigmoid(alpha * x) (Elementwise.cpp): Swish, and the SiLU (alpha 1)
/// that CausalConvWithState fuses.
mlir::Value swish(NodeImporter &node, mlir::Value x, float alpha);

/// log(softmax(x)) along `axis` (Reduction.cpp), shared by LogSoftmax and
/// SoftmaxCrossEntropyLoss.
mlir::Value logSoftmax(NodeImporter &node, mlir::Value x, int64_t axis);

/// A convolution of `input` and `weight` (+ `bias`) with the node's Conv
/// attributes (NeuralNetwork.cpp), of element type `resultElement` when
/// given (a quantized product's), else the inferred one; null after
/// recording why not.
mlir::Value convolutionFromAttributes(NodeImporter &node, mlir::Value input,
                                      mlir::Value weight, mlir::Value bias,
                                      mlir::Type resultElement = {});

/// lhs x rhs (ONNX MatMul semantics, NeuralNetwork.cpp). A stack of rows
/// times a matrix ([..., M, K] x [K, N], as every Linear layer of a
/// transformer and every recurrent layer's input projection) is computed as
/// one [rows, K] x [K, N] product reshaped back: the rows merge into M, so
/// the contraction gets the 2-D schedule instead of a loop over the stack.
/// Null after recording why not.
mlir::Value matrixProduct(NodeImporter &node, mlir::Value lhs, mlir::Value rhs);

/// Entry i of input `input` indexes an axis of extent
/// extents[i % extents.size()] (one extent for Gather, one per tuple entry
/// for GatherND) and must lie in [-extent, extent): ONNX leaves other
/// indices undefined and onnxruntime refuses them, where clamping would
/// give wrong rows silently. Constant indices are checked here, saying
/// which entry is wrong; indices known only at run time get a count of
/// those out of range, which the runtime checks before returning results
/// (GatherScatter.cpp).
mlir::LogicalResult checkIndices(NodeImporter &node, size_t input,
                                 llvm::ArrayRef<int64_t> extents);

/// Elements [offset, offset + size) of `input` along `axis`, the rest
/// whole (Slicing.cpp): a part of Split and SplitToSequence.
mlir::Value sliceAlong(NodeImporter &node, mlir::Value input, int64_t axis, int64_t offset,
                       int64_t size);

/// `slices` (of one type) stacked along a new axis `axis`; null if their
/// types differ (ControlFlow.cpp).
mlir::Value stack(mlir::OpBuilder &builder, mlir::Location loc, llvm::ArrayRef<mlir::Value> slices,
                  int64_t axis);

/// The most elements a handler computes itself at compile time (a Range, a
/// window, an identity matrix, resize taps) and the most recurrent steps it
/// unrolls: sizes come from the model's data, and an unbounded one would
/// let a small file exhaust the compiler.
inline constexpr int64_t kMaxComputedElements = int64_t(1) << 24;
inline constexpr int64_t kMaxUnrolledSteps = int64_t(1) << 14;

/// Fails, saying so, when `count` (of what `what` names) exceeds `limit`.
mlir::LogicalResult checkComputeBudget(NodeImporter &node, double count, const llvm::Twine &what,
                                       int64_t limit = kMaxComputedElements);

/// Resolves a possibly negative axis against `rank` (ONNX's convention);
/// nullopt when it is out of range. `inclusive` allows axis == rank.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank,
                                     bool inclusive = false);

/// normalizeAxis on every entry, in place; false after recording why.
bool normalizeAxes(NodeImporter &node, llvm::SmallVectorImpl<int64_t> &axes,
                   int64_t rank);

/// Slice and Pad whose parameters are known only at run time, given the
/// result shape `stated` the model states (SlicingAtRunTime.cpp); Pad's
/// `value` is its padding scalar.
mlir::LogicalResult importSliceAtRunTime(NodeImporter &node, mlir::RankedTensorType stated);
mlir::LogicalResult importPadAtRunTime(NodeImporter &node, mlir::RankedTensorType stated,
                                       llvm::StringRef mode, mlir::Value value);

/// Input `input`'s integers as a 1-D i64 tensor, at run time
/// (StatedShapes.cpp).
mlir::Value runtimeInt64s(NodeImporter &node, size_t input);

/// The positions of the `kept` nonzero entries of `flags` (a 1-D tensor)
/// known only at run time, `kept` being the count the model states, after a
/// run-time check of that count (`what` names the flags in the error;
/// GatherScatter.cpp).
mlir::Value positionsOfNonzero(NodeImporter &node, mlir::Value flags, int64_t kept,
                               const llvm::Twine &what);

/// Ends the run with an error naming the node unless `count` (a 0-D i64
/// tensor) is zero; the message is the count, then `problem`.
void stopUnlessZero(NodeImporter &node, mlir::Value count, const llvm::Twine &problem);

/// What a shape-giving input known only at run time is taken to hold: the
/// value the node's result shape as the model states it implies, and for
/// each entry the values that give that shape (none: any value does).
struct ImpliedInts {
  llvm::SmallVector<int64_t> values;
  llvm::SmallVector<llvm::SmallVector<int64_t>> accepted;
};

/// `values`, each entry accepting only itself.
ImpliedInts exactly(llvm::ArrayRef<int64_t> values);

/// The sets of `count` axes among `rank` (each sorted) for which `gives`
/// holds: those a Squeeze, Unsqueeze or reduction may name to give its
/// stated result.
llvm::SmallVector<llvm::SmallVector<int64_t>>
axisSetsGiving(int64_t rank, int64_t count,
               llvm::function_ref<bool(llvm::ArrayRef<int64_t>)> gives);

/// `axes` of a tensor of `rank` as an axes input may list them: in any
/// order, each also as its negative form.
ImpliedInts anyOrderOf(llvm::ArrayRef<int64_t> axes, int64_t rank);

/// The shape the model states for output `output`, as what a shape input
/// giving it must hold; nothing when the model states none.
std::optional<ImpliedInts> statedShape(NodeImporter &node, size_t output = 0);

/// Records that shape-giving input `input` (`role` names it) must be a
/// constant or its node's result shape stated, with the --freeze-input
/// hint; fails.
mlir::LogicalResult refuseRunTimeShapeInput(NodeImporter &node, size_t input,
                                            llvm::StringRef role);

/// [entries, rank] i64: 1 where entry k of `axes` (an [entries, 1] i64
/// tensor, negative axes counted from `rank`) names axis j, at run time.
mlir::Value axisTable(NodeImporter &node, mlir::Value axes, int64_t rank);

/// Among `candidates` (an axis and what was computed along it), the one
/// whose axis the one-element run-time input `input` names (negative axes
/// counted from `rank`); the last when it names none. `namedAny`, when
/// given, receives an i1 saying whether it names one.
mlir::Value selectAlongRunTimeAxis(NodeImporter &node, size_t input, int64_t rank,
                                   llvm::ArrayRef<std::pair<int64_t, mlir::Value>> candidates,
                                   mlir::Value *namedAny = nullptr);

/// The integers of shape-giving input `input` (`role` names it): its
/// constant value; or, when it is known only at run time, what `imply`
/// derives from the result types the model states (declaredOutputType),
/// with a run-time check that the input holds an accepted value. Nothing,
/// after recording why, when `imply` gives nothing either.
std::optional<llvm::SmallVector<int64_t>>
shapeGivingInts(NodeImporter &node, size_t input, llvm::StringRef role,
                llvm::function_ref<std::optional<ImpliedInts>()> imply);

} // namespace tessel::onnx_import

#endif // TESSEL_COMPILER_ONNX_OPS_HANDLERS_H
