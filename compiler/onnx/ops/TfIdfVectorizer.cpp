//===- TfIdfVectorizer.cpp - ONNX TfIdfVectorizer (opset 9) ---------------===//
//
// Counts, in each row of integers, the occurrences of the pool's n-grams,
// as ONNX's reference walks them: for each skip distance d from 1 to
// max_skip_count + 1, every n-gram of n items d apart whose length is
// within [min_gram_length, max_gram_length] (unigrams only at d = 1, where
// skipping means nothing). Each count lands at the output index that
// ngram_indexes gives its pool entry; the mode then weighs it (TF: the
// count; IDF: the weight where the count is positive; TFIDF: weight times
// count; weights default to 1).
//
// Every window position is known at compile time: the items of all windows
// of one (d, n) are one gather, compared with that length's pool entries at
// once ([rows, windows, entries, n]), and the matches summed over windows.
// Strings (pool_strings) are not supported.
//
//===----------------------------------------------------------------------===//

#include "compiler/onnx/ops/Formula.h"
#include "compiler/onnx/ops/Handlers.h"
#include "dialects/tessel/TesselDialect.h"

using namespace mlir;

namespace tessel::onnx_import {
namespace {

/// The pool's n-grams of one length, in pool order.
struct PoolLength {
  int64_t length = 0;
  int64_t firstEntry = 0;     // its first entry's position among all n-grams
  SmallVector<int64_t> items; // entries x length, row-major
  int64_t entries() const { return length ? int64_t(items.size()) / length : 0; }
};

/// The pool split by n-gram length, as ngram_counts gives the offsets; null
/// after recording why not.
std::optional<SmallVector<PoolLength>> readPool(NodeImporter &node, ArrayRef<int64_t> pool,
                                                ArrayRef<int64_t> counts) {
  SmallVector<PoolLength> lengths;
  int64_t entry = 0;
  for (auto [i, start] : llvm::enumerate(counts)) {
    int64_t end = i + 1 < counts.size() ? counts[i + 1] : int64_t(pool.size());
    int64_t length = int64_t(i) + 1;
    if (start < 0 || end < start || end > int64_t(pool.size()) || (end - start) % length != 0) {
      (void)node.unsupported("ngram_counts must give increasing offsets into pool_int64s, each "
                             "length's items a whole number of n-grams");
      return std::nullopt;
    }
    PoolLength part{length, entry, SmallVector<int64_t>(pool.slice(start, end - start))};
    entry += part.entries();
    lengths.push_back(std::move(part));
  }
  return lengths;
}

class NgramCounter : public Formula {
public:
  NgramCounter(NodeImporter &node, Value rows) : Formula(node), rows(rows) {}

  /// Occurrences [B, entries] (i64) of `pool`'s entries as n-grams of items
  /// `distance` apart; null when no window fits in a row.
  Value count(const PoolLength &pool, int64_t distance) {
    auto type = cast<RankedTensorType>(rows.getType());
    int64_t batch = type.getDimSize(0), width = type.getDimSize(1), n = pool.length;
    int64_t windows = width - distance * (n - 1);
    if (windows <= 0 || pool.entries() == 0)
      return {};
    SmallVector<int64_t> positions;
    for (int64_t start = 0; start < windows; ++start)
      for (int64_t k = 0; k < n; ++k)
        positions.push_back(start + k * distance);
    Value items = node.createInferred<GatherOp>(rows, node.int64Constant(positions, {windows, n}),
                                                b.getI64IntegerAttr(1)); // [B, W, n]
    Value grams = reshape(items, {batch, windows, 1, n});
    Value entries = node.int64Constant(pool.items, {1, 1, pool.entries(), n});
    Value same = convert(compare("eq", grams, entries), b.getI64Type()); // [B, W, P, n]
    Value matches =
        node.createInferred<ReduceOp>(b.getStringAttr("min"), same, b.getDenseI64ArrayAttr({3}));
    return node.createInferred<ReduceOp>(b.getStringAttr("sum"), matches,
                                         b.getDenseI64ArrayAttr({1}));
  }

private:
  Value rows; // [B, L] i64
};

LogicalResult importTfIdfVectorizer(NodeImporter &node) {
  if (node.hasAttr("pool_strings"))
    return node.unsupported("string pools (pool_strings) are not supported");
  RankedTensorType type = node.inputType(0);
  if (!type.hasStaticShape() || type.getRank() < 1 || type.getRank() > 2 ||
      type.getNumElements() == 0 || !type.getElementType().isInteger())
    return node.unsupported("X must be a static, non-empty [C] or [B, C] tensor of integers");
  int64_t minLength = node.intAttr("min_gram_length", 0);
  int64_t maxLength = node.intAttr("max_gram_length", 0);
  int64_t maxSkip = node.intAttr("max_skip_count", 0);
  std::optional<std::string> mode = node.stringAttr("mode");
  std::optional<std::vector<int64_t>> pool = node.intsAttr("pool_int64s");
  std::optional<std::vector<int64_t>> counts = node.intsAttr("ngram_counts");
  std::optional<std::vector<int64_t>> indexes = node.intsAttr("ngram_indexes");
  std::vector<float> weights = node.floatsAttr("weights").value_or(std::vector<float>{});
  if (minLength < 1 || maxLength < minLength || maxSkip < 0 || !pool || !counts || !indexes ||
      indexes->empty() || !mode || (*mode != "TF" && *mode != "IDF" && *mode != "TFIDF"))
    return node.unsupported("it needs 1 <= min_gram_length <= max_gram_length, max_skip_count "
                            ">= 0, pool_int64s, ngram_counts, ngram_indexes and a mode of TF, "
                            "IDF or TFIDF");
  std::optional<SmallVector<PoolLength>> lengths = readPool(node, *pool, *counts);
  if (!lengths)
    return failure();
  int64_t entries = lengths->empty() ? 0 : lengths->back().firstEntry + lengths->back().entries();
  int64_t outputs = *llvm::max_element(*indexes) + 1;
  if (int64_t(indexes->size()) != entries ||
      llvm::any_of(*indexes, [](int64_t index) { return index < 0; }) ||
      (!weights.empty() && int64_t(weights.size()) != outputs))
    return node.unsupported("ngram_indexes must give each pool n-gram a non-negative output "
                            "index, and weights one weight per output");

  OpBuilder &b = node.builder();
  int64_t batch = type.getRank() == 2 ? type.getDimSize(0) : 1;
  int64_t width = type.getDimSize(type.getRank() - 1);
  Value rows =
      ReshapeOp::create(b, node.loc(), RankedTensorType::get({batch, width}, b.getI64Type()),
                        convertElements(node, node.input(0), b.getI64Type()));
  NgramCounter counter(node, rows);
  // Each (distance, length) counted, into the output index of each entry:
  // a [entries, outputs] matrix of 0 and 1 sums them where indexes meet.
  Type f32 = b.getF32Type();
  Value frequencies;
  for (const PoolLength &pool : *lengths) {
    if (pool.length < minLength || pool.length > maxLength)
      continue;
    // Unigrams only at distance 1, as the reference raises its shortest
    // length to 2 after the first distance.
    int64_t distances = pool.length == 1 ? 1 : maxSkip + 1;
    Value occurrences;
    for (int64_t distance = 1; distance <= distances; ++distance)
      if (Value found = counter.count(pool, distance))
        occurrences = occurrences ? counter.add(occurrences, found) : found;
    if (!occurrences)
      continue;
    SmallVector<float> scatter(pool.entries() * outputs, 0.0f);
    for (int64_t e = 0; e < pool.entries(); ++e)
      scatter[e * outputs + (*indexes)[pool.firstEntry + e]] = 1.0f;
    auto scatterType = RankedTensorType::get({pool.entries(), outputs}, f32);
    Value spread = node.createInferred<MatMulOp>(
        counter.convert(occurrences, f32),
        ConstantOp::create(b, node.loc(),
                           DenseElementsAttr::get(scatterType, ArrayRef<float>(scatter))));
    frequencies = frequencies ? counter.add(frequencies, spread) : spread;
  }
  if (!frequencies)
    frequencies = node.splatConstant(f32, 0.0, {batch, outputs});
  Value weight =
      weights.empty()
          ? node.splatConstant(f32, 1.0)
          : ConstantOp::create(b, node.loc(),
                               DenseElementsAttr::get(RankedTensorType::get({outputs}, f32),
                                                      ArrayRef<float>(weights)));
  Value result = frequencies;
  if (*mode == "IDF")
    result = counter.select(counter.compare("gt", frequencies, counter.scalar(frequencies, 0)),
                            weight, counter.scalar(frequencies, 0));
  else if (*mode == "TFIDF")
    result = counter.mul(frequencies, weight);
  if (type.getRank() == 1)
    result = counter.reshape(result, {outputs});
  return node.setInferredOutput(0, result);
}

} // namespace

void registerTfIdfVectorizerHandlers(OpRegistry &registry) {
  registry.on("TfIdfVectorizer", 9, importTfIdfVectorizer);
}

} // namespace tessel::onnx_import
