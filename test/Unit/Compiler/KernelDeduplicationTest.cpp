//===- KernelDeduplicationTest.cpp - Which kernels are compiled once ------===//
//
// A kernel is another's alias only when it is the same function in all but
// its name and locations: a different constant, attribute or type keeps it
// apart. Its entry is then the other's code under its own name.
//
//===----------------------------------------------------------------------===//

#include "compiler/KernelDeduplication.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

namespace tessel {
namespace {

// k1 is k0 at other locations; k2 adds another constant, k3 carries an
// attribute k0 has not, k4 takes f64: all three are kernels of their own.
// k5 is k2's alias, later in the module than k1.
constexpr const char *kKernels = R"mlir(
  func.func private @k0(%x: f32) -> f32 {
    %c = arith.constant 1.0 : f32
    %y = arith.addf %x, %c : f32
    return %y : f32
  }
  func.func private @k1(%x: f32) -> f32 {
    %c = arith.constant 1.0 : f32 loc("layer1")
    %y = arith.addf %x, %c : f32 loc("layer1")
    return %y : f32
  }
  func.func private @k2(%x: f32) -> f32 {
    %c = arith.constant 2.0 : f32
    %y = arith.addf %x, %c : f32
    return %y : f32
  }
  func.func private @k3(%x: f32) -> f32 attributes {tessel.lowering = 1 : i64} {
    %c = arith.constant 1.0 : f32
    %y = arith.addf %x, %c : f32
    return %y : f32
  }
  func.func private @k4(%x: f64) -> f64 {
    %c = arith.constant 1.0 : f64
    %y = arith.addf %x, %c : f64
    return %y : f64
  }
  func.func private @k5(%x: f32) -> f32 {
    %c = arith.constant 2.0 : f32
    %y = arith.addf %x, %c : f32
    return %y : f32
  }
)mlir";

class KernelDeduplicationTest : public ::testing::Test {
protected:
  KernelDeduplicationTest() {
    context.loadDialect<mlir::arith::ArithDialect, mlir::func::FuncDialect>();
    module = mlir::parseSourceString<mlir::ModuleOp>(kKernels, &context);
  }

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

TEST_F(KernelDeduplicationTest, OnlyTheSameFunctionUnderAnotherNameIsAnAlias) {
  ASSERT_TRUE(module);
  std::vector<KernelAlias> aliases = findKernelAliases(*module);
  ASSERT_EQ(aliases.size(), 2u);
  EXPECT_EQ(aliases[0].kernel, "k1");
  EXPECT_EQ(aliases[0].representative, "k0");
  EXPECT_EQ(aliases[1].kernel, "k5");
  EXPECT_EQ(aliases[1].representative, "k2");
}

TEST_F(KernelDeduplicationTest, DeduplicationErasesTheAliases) {
  ASSERT_TRUE(module);
  deduplicateKernels(*module);
  std::vector<std::string> left;
  for (auto function : module->getOps<mlir::func::FuncOp>())
    left.push_back(function.getSymName().str());
  EXPECT_EQ(left, (std::vector<std::string>{"k0", "k2", "k3", "k4"}));
}

TEST(KernelAliasEntries, AnAliasRunsItsRepresentativesCodeUnderItsOwnName) {
  Executable executable;
  KernelEntry entry;
  entry.kernel = "k0";
  entry.symbol = "k0_entry";
  entry.workgroupCount = 8;
  entry.bindingBytes = {64, 64};
  executable.entries = {entry};
  addAliasEntries(executable, {{"k1", "k0"}});
  ASSERT_EQ(executable.entries.size(), 2u);
  const KernelEntry &alias = executable.entries[1];
  EXPECT_EQ(alias.kernel, "k1");
  EXPECT_EQ(alias.symbol, "k0_entry");
  EXPECT_EQ(alias.workgroupCount, 8);
  EXPECT_EQ(alias.bindingBytes, entry.bindingBytes);
}

} // namespace
} // namespace tessel
