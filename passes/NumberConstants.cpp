//===- NumberConstants.cpp - Deterministic names for constant globals -----===//

#include "passes/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

namespace tessel {
#define GEN_PASS_DEF_TESSELNUMBERCONSTANTSPASS
#include "passes/Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {
namespace {

struct TesselNumberConstantsPass : impl::TesselNumberConstantsPassBase<TesselNumberConstantsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);

    // Globals in the order of their first use; the walk order of the
    // module's functions is fixed by the IR itself.
    SmallVector<memref::GlobalOp> ordered;
    llvm::SmallPtrSet<Operation *, 16> seen;
    module.walk([&](memref::GetGlobalOp use) {
      auto global = symbols.lookup<memref::GlobalOp>(use.getName());
      if (global && global.getConstant() && seen.insert(global).second)
        ordered.push_back(global);
    });

    // Move them first, then rename: renaming to a name that another global
    // still holds would clash.
    Block *body = module.getBody();
    for (memref::GlobalOp global : llvm::reverse(ordered))
      global->moveBefore(body, body->begin());
    for (auto [index, global] : llvm::enumerate(ordered))
      if (failed(symbols.rename(global,
                                StringAttr::get(&getContext(), "__tessel_rename_" + Twine(index)))))
        return signalPassFailure();
    for (auto [index, global] : llvm::enumerate(ordered))
      if (failed(
              symbols.rename(global, StringAttr::get(&getContext(), "__constant_" + Twine(index)))))
        return signalPassFailure();
  }
};

} // namespace
} // namespace tessel
