//===- KernelStatistics.cpp - What each kernel computes, for reports ------===//

#include "compiler/KernelStatistics.h"
#include "compiler/Locations.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace tessel {

namespace {

/// Whether `op` of a linalg body computes something: an arith or math op
/// other than a constant or a conversion.
bool isArithmetic(Operation &op) {
  if (!isa<arith::ArithDialect, math::MathDialect>(op.getDialect()))
    return false;
  return !isa<arith::ConstantOp, CastOpInterface>(op);
}

/// Whether arithmetic `op` computes on floats; comparisons are judged by
/// what they compare, the rest by what they produce.
bool computesOnFloats(Operation &op) {
  Type type = isa<arith::CmpFOp, arith::CmpIOp>(op) ? op.getOperand(0).getType()
                                                      : op.getResult(0).getType();
  return isa<FloatType>(getElementTypeOrSelf(type));
}

/// How many times the loops around `op` run it (a recurrence's steps), or
/// nullopt when a trip count is not a constant.
std::optional<uint64_t> enclosingTrips(Operation *op) {
  uint64_t trips = 1;
  for (auto loop = op->getParentOfType<scf::ForOp>(); loop;
       loop = loop->getParentOfType<scf::ForOp>()) {
    std::optional<APInt> count = loop.getStaticTripCount();
    if (!count)
      return std::nullopt;
    trips *= count->getZExtValue();
  }
  return trips;
}

void countOperations(linalg::LinalgOp linalgOp, KernelStatistics &statistics) {
  std::optional<uint64_t> trips = enclosingTrips(linalgOp);
  if (!trips)
    return;
  uint64_t iterations = *trips;
  for (int64_t extent : linalgOp.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(extent))
      return;
    iterations *= static_cast<uint64_t>(extent);
  }
  for (Operation &op : linalgOp.getBlock()->without_terminator()) {
    if (!isArithmetic(op))
      continue;
    (computesOnFloats(op) ? statistics.floatOperations : statistics.integerOperations) +=
        iterations;
  }
}

KernelStatistics statisticsOf(func::FuncOp kernel) {
  KernelStatistics statistics;
  SmallVector<std::string> names;
  nodeNamesOf(kernel.getLoc(), names);
  llvm::StringSet<> seen;
  for (std::string &name : names)
    if (seen.insert(name).second)
      statistics.sourceNodes.push_back(std::move(name));
  kernel.walk([&](linalg::LinalgOp linalgOp) { countOperations(linalgOp, statistics); });
  return statistics;
}

} // namespace

llvm::StringMap<KernelStatistics> collectKernelStatistics(ModuleOp module) {
  llvm::StringMap<KernelStatistics> statistics;
  for (auto function : module.getOps<func::FuncOp>())
    if (function->hasAttr(kKernelAttrName))
      statistics[function.getSymName()] = statisticsOf(function);
  return statistics;
}

} // namespace tessel
