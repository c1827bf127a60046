//===- tessel-opt.cpp - mlir-opt with Tessel's dialects and passes --------===//

#include "compiler/Registration.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  tessel::registerCompilerDialects(registry);
  tessel::registerCompilerPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Tessel optimizer driver\n", registry));
}
