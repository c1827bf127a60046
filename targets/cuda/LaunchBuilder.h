//===- LaunchBuilder.h - What hand-built launches build with -----*- C++ -*-===//
//
// The kernels this target writes by hand (tensor-core products, attention)
// compute indices with unsigned index arithmetic and guard stores with
// scf.if; this base holds their builder and those few helpers.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TARGETS_CUDA_LAUNCHBUILDER_H
#define TESSEL_TARGETS_CUDA_LAUNCHBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace tessel::cuda {

/// Terminates `launch`'s empty body and points `builder` at its start.
inline void enterLaunch(mlir::OpBuilder &builder, mlir::gpu::LaunchOp launch) {
  mlir::Block &body = launch.getBody().front();
  builder.setInsertionPointToStart(&body);
  mlir::gpu::TerminatorOp::create(builder, launch.getLoc());
  builder.setInsertionPointToStart(&body);
}

/// An OpBuilder at an op, with index arithmetic on unsigned values.
class LaunchBuilder {
protected:
  explicit LaunchBuilder(mlir::Operation *at) : builder(at), loc(at->getLoc()) {}

  mlir::Value index(int64_t value) {
    return mlir::arith::ConstantIndexOp::create(builder, loc, value);
  }
  mlir::Value add(mlir::Value x, mlir::Value y) {
    return mlir::arith::AddIOp::create(builder, loc, x, y);
  }
  mlir::Value add(mlir::Value x, int64_t y) { return y == 0 ? x : add(x, index(y)); }
  mlir::Value mul(mlir::Value x, int64_t y) {
    return mlir::arith::MulIOp::create(builder, loc, x, index(y));
  }
  mlir::Value div(mlir::Value x, int64_t y) {
    return mlir::arith::DivUIOp::create(builder, loc, x, index(y));
  }
  mlir::Value rem(mlir::Value x, int64_t y) {
    return mlir::arith::RemUIOp::create(builder, loc, x, index(y));
  }
  mlir::Value minimum(mlir::Value x, int64_t bound) {
    return mlir::arith::MinUIOp::create(builder, loc, x, index(bound));
  }
  mlir::Value below(mlir::Value x, mlir::Value bound) {
    return mlir::arith::CmpIOp::create(builder, loc, mlir::arith::CmpIPredicate::ult, x, bound);
  }
  mlir::Value below(mlir::Value x, int64_t bound) { return below(x, index(bound)); }

  /// Builds `body` where `condition` holds (always, for a null condition).
  void onlyIf(mlir::Value condition, llvm::function_ref<void()> body) {
    if (!condition) {
      body();
      return;
    }
    auto branch = mlir::scf::IfOp::create(builder, loc, condition, /*withElseRegion=*/false);
    mlir::OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&branch.getThenRegion().front());
    body();
  }

  mlir::OpBuilder builder;
  mlir::Location loc;
};

} // namespace tessel::cuda

#endif // TESSEL_TARGETS_CUDA_LAUNCHBUILDER_H
