//===- BatchAxes.h - Where the batch lies, and whether samples meet -*- C++ -*-===//
//
// tessel-compile --dynamic-batch compiles a model for one sample and runs
// it once per sample. That computes what the model computes only where no
// node lets two samples meet: a Conv or a MatMul keeps them apart, a
// reduction over the batch axis, a Softmax along it or a Reshape that
// fixes its size does not. BatchAxes follows the batch axis from the graph
// inputs through each node, by the node's ONNX semantics, and names the
// first node it cannot follow.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_COMPILER_ONNX_BATCHAXES_H
#define TESSEL_COMPILER_ONNX_BATCHAXES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include "onnx/onnx_pb.h"

#include <functional>
#include <optional>
#include <string>

namespace tessel::onnx_import {

/// Where the batch lies in a value: along `axis`, whose one-sample size is
/// outer * inner, and whose index in a run of N samples is
/// (o * N + n) * inner + i for sample n. Reshapes merge the batch with
/// other dimensions on either side (attention's [seq * N, E] and
/// [N * heads, seq, d]); every sample's elements stay its own.
struct BatchLayout {
  int64_t axis = 0;
  int64_t outer = 1, inner = 1;
  bool operator==(const BatchLayout &other) const {
    return axis == other.axis && outer == other.outer && inner == other.inner;
  }
  bool operator!=(const BatchLayout &other) const { return !(*this == other); }
};

/// What a node that combines positions along a padded length (--max-shape)
/// needs first: input `input`'s padding along `axis` set to `fill`, the
/// value that leaves the combination as it is at the length (0 for a sum or
/// a product of matrices, the lowest value for a maximum or a softmax, the
/// highest for a minimum).
struct PaddingFill {
  enum Fill { Zero, Lowest, Highest };
  int input = 0;
  int64_t axis = 0;
  Fill fill = Zero;
};

/// The op families the rules follow alike (BatchAxes.cpp).
const llvm::StringSet<> &elementwiseUnaryOps();
const llvm::StringSet<> &broadcastingOps();

class BatchAxes {
public:
  /// `valueOf` gives the imported value of a name (its type is the
  /// one-sample type; constants are read from it).
  BatchAxes(int64_t opset, std::function<mlir::Value(const std::string &)> valueOf)
      : opset(opset), valueOf(std::move(valueOf)) {}

  /// Graph input `name` holds the batch in dimension 0.
  void addBatchedInput(const std::string &name) { axes[name] = BatchLayout(); }
  /// Value `name` holds the batch (or another axis whose positions stay
  /// apart, like it) as `layout` says.
  void setLayout(const std::string &name, BatchLayout layout) { axes[name] = layout; }

  /// Follows the axis as a length padded to its bound (--max-shape) rather
  /// than as a batch run a sample at a time: a node may then combine
  /// positions along it once their padding is filled (paddingFills), a
  /// product of two values that vary along it pairs its positions
  /// (attention's scores), and a slice of shared data up to the length
  /// (positional embeddings) varies along it (PaddedLength.cpp).
  /// `bound` is the length's bound, the size the model is imported at.
  void followPaddedLength(int64_t bound) { paddedBound = bound; }
  /// The padding `node` must have filled before it is imported; none when
  /// it combines no positions along the length.
  llvm::SmallVector<PaddingFill, 2> paddingFills(const onnx::NodeProto &node) const;
  /// Whether `name` pairs positions along the padded length in two axes.
  bool isPaired(const std::string &name) const { return pairs.count(name); }

  /// Follows `node`: its outputs' batch axes, or why it may let samples
  /// meet.
  std::optional<std::string> follow(const onnx::NodeProto &node);

  /// The axis of `name` that holds the batch; none for a value that does
  /// not depend on the batch.
  std::optional<int64_t> axisOf(const std::string &name) const;
  std::optional<BatchLayout> layoutOf(const std::string &name) const;
  /// Whether `name` holds the batch size (read from a batched value's
  /// shape) in some of its elements.
  bool holdsBatchSize(const std::string &name) const { return sizeEntries.count(name); }

  /// `node`'s integer attribute `name`, or `otherwise` when it has none.
  static int64_t intAttribute(const onnx::NodeProto &node, llvm::StringRef name,
                              int64_t otherwise);
  /// `axis` counted from the front of a rank-`rank` tensor.
  static int64_t normalized(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

private:
  static const onnx::AttributeProto *findAttribute(const onnx::NodeProto &node,
                                                   llvm::StringRef name);

  mlir::RankedTensorType typeOf(const std::string &name) const;
  /// The integers of constant input `name`; none when it is not constant.
  std::optional<llvm::SmallVector<int64_t>> constantInts(const std::string &name) const;
  /// `node`'s integer list attribute `attribute`, else its constant input
  /// `input` (the opsets moved such lists from attributes to inputs; -1:
  /// none).
  std::optional<llvm::SmallVector<int64_t>> intsOf(const onnx::NodeProto &node,
                                                   const char *attribute, int input) const;

  /// Whether `node`, or a subgraph of it, reads a batched value.
  bool readsBatched(const onnx::NodeProto &node) const;
  /// A Resize or Upsample's constant scale along axis 0.
  std::optional<double> batchScale(const onnx::NodeProto &node) const;

  using Result = std::optional<std::string>;
  /// The rules, each for a family of ops: they set `out` to the axis of
  /// the outputs (all alike) or return why the node mixes samples.
  Result broadcasting(const onnx::NodeProto &node, int64_t &out);
  Result perSampleImage(const onnx::NodeProto &node, int64_t &out);
  Result alongAxis(const onnx::NodeProto &node, int64_t batch, int64_t &out);
  Result reduction(const onnx::NodeProto &node, int64_t batch, int64_t &out);
  /// `layout` is the data's on entry, the result's on return.
  Result reshaping(const onnx::NodeProto &node, BatchLayout &layout);
  /// The layout of a Reshape or Flatten from `in` to `result` (one-sample
  /// shapes) with the batch at `layout` in `in`, where the batch lands on
  /// result axis `axis`; none when it cannot land there.
  std::optional<BatchLayout> reshapedLayout(llvm::ArrayRef<int64_t> in, BatchLayout layout,
                                            llvm::ArrayRef<int64_t> result, int64_t axis) const;
  Result matrixProduct(const onnx::NodeProto &node, int64_t &out);
  Result gather(const onnx::NodeProto &node, int64_t &out);
  /// A node reading a value that holds the batch size: the shape
  /// arithmetic of `x.view(x.size(0), -1)` or `zeros(x.size(0), ...)`.
  /// (BatchSizes.cpp)
  Result followBatchSize(const onnx::NodeProto &node);
  Result scaledBatchSize(const onnx::NodeProto &node);
  Result comparedBatchSize(const onnx::NodeProto &node);
  Result selectedBatchSize(const onnx::NodeProto &node);
  std::optional<llvm::SmallVector<int64_t>> sizeEntriesOf(const std::string &name) const;

  /// A padded length's positions in two axes of one value.
  struct PairedAxes {
    int64_t rows = 0, columns = 0;
  };
  /// The axes along which `name` varies with the padded length: none, one,
  /// or a pair's two; none for a length merged with other dimensions.
  llvm::SmallVector<int64_t, 2> paddedAxes(const std::string &name) const;
  /// The axes a Reduce* node reduces, counted from the front: every axis
  /// when it names none (none with noop_with_empty_axes); nullopt when they
  /// are not constants.
  std::optional<llvm::SmallVector<int64_t>> reducedAxes(const onnx::NodeProto &node,
                                                        int64_t rank) const;
  /// Whether `name` depends on the length in a way paddedAxes does not
  /// describe: merged with other dimensions, or holding its size.
  bool variesOtherwise(const std::string &name) const;
  /// Whether constant integer `name` holds the bound at entry `entry`: the
  /// length itself, not a multiple of it.
  bool holdsBound(const std::string &name, int64_t entry) const;
  /// A node that combines positions along the padded length, or reads a
  /// pair of them: its outputs' axes, or why it is not followed; none when
  /// the general rules apply (PaddedLength.cpp).
  std::optional<Result> followPadded(const onnx::NodeProto &node);
  /// Every fill the combination in `node` needs, before paddingFills drops
  /// those whose input already holds zeros.
  llvm::SmallVector<PaddingFill, 2> combinedPadding(const onnx::NodeProto &node) const;
  Result followCombining(const onnx::NodeProto &node, llvm::ArrayRef<PaddingFill> fills);
  Result followPairs(const onnx::NodeProto &node);
  /// Whether `node` multiplies queries by keys that both vary along the
  /// length: a product whose rows and columns pair its positions.
  bool makesPair(const onnx::NodeProto &node) const;
  /// Sets `name`'s axes from the output axes `varying`: none, one or two.
  void setPaddedAxes(const std::string &name, llvm::ArrayRef<int64_t> varying);
  /// A Slice of shared data from 0 up to the length held by its `ends`
  /// (positional embeddings), or a Range from 0 up to it (torch.arange):
  /// it varies along the axes that end at the length.
  std::optional<Result> upToLength(const onnx::NodeProto &node);

  int64_t opset;
  std::function<mlir::Value(const std::string &)> valueOf;
  llvm::StringMap<BatchLayout> axes;
  /// The padded length's bound; 0 when following a batch.
  int64_t paddedBound = 0;
  llvm::StringMap<PairedAxes> pairs;
  /// The axes along which a value's padding holds zeros.
  llvm::StringMap<llvm::SmallVector<int64_t, 2>> zeroPadding;
  /// Integer vectors and scalars computed from the shape of a batched
  /// value: the positions of their elements that hold the batch size (a
  /// scalar's is 0). Per sample they hold 1, so the model's reshapes and
  /// broadcasts built from them are right for one sample.
  llvm::StringMap<llvm::SmallVector<int64_t>> sizeEntries;
};

} // namespace tessel::onnx_import

#endif // TESSEL_COMPILER_ONNX_BATCHAXES_H
