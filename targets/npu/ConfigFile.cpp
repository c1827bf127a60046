//===- ConfigFile.cpp - The NPU's configuration from JSON -----------------===//

#include "targets/npu/ConfigFile.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

namespace tessel::npu {

namespace {

using Config = tessel::schema::npu::Config;

llvm::Error error(llvm::StringRef origin, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 origin + ": " + message);
}

/// Reads one key's value into `config`; an error message for a wrong one.
std::string readKey(llvm::StringRef key, const llvm::json::Value &value, Config &config) {
  auto integer = [&](auto &field) -> std::string {
    std::optional<int64_t> number = value.getAsInteger();
    if (!number || *number < 0)
      return "'" + key.str() + "' is not a non-negative integer";
    field = static_cast<std::decay_t<decltype(field)>>(*number);
    if (uint64_t(field) != uint64_t(*number))
      return "'" + key.str() + "' is too large";
    return "";
  };
  auto number = [&](double &field) -> std::string {
    std::optional<double> real = value.getAsNumber();
    if (!real)
      return "'" + key.str() + "' is not a number";
    field = *real;
    return "";
  };
  auto choice = [&](bool &field, llvm::StringRef no, llvm::StringRef yes) -> std::string {
    std::optional<llvm::StringRef> text = value.getAsString();
    if (!text || (*text != no && *text != yes))
      return "'" + key.str() + "' is not \"" + no.str() + "\" or \"" + yes.str() + "\"";
    field = *text == yes;
    return "";
  };
  if (key == "array_rows")
    return integer(config.arrayRows);
  if (key == "array_columns")
    return integer(config.arrayColumns);
  if (key == "dataflow")
    return choice(config.outputStationary, "weight_stationary", "output_stationary");
  if (key == "scratchpad_bytes")
    return integer(config.scratchpadBytes);
  if (key == "accumulator_bytes")
    return integer(config.accumulatorBytes);
  if (key == "parameter_bytes")
    return integer(config.parameterBytes);
  if (key == "dma_bytes_per_cycle")
    return integer(config.dmaBytesPerCycle);
  if (key == "dma_latency_cycles")
    return integer(config.dmaLatencyCycles);
  if (key == "clock_mhz")
    return number(config.clockMhz);
  if (key == "mac_energy_pj")
    return number(config.macEnergyPj);
  if (key == "sram_byte_energy_pj")
    return number(config.sramByteEnergyPj);
  if (key == "dram_byte_energy_pj")
    return number(config.dramByteEnergyPj);
  if (key == "timing")
    return choice(config.scalesimTiming, "tessel", "scalesim");
  return "unknown key '" + key.str() +
         "' (the keys are those of docs/npu/isa.md section 2)";
}

} // namespace

llvm::Expected<Config> parseNpuConfig(llvm::StringRef text, llvm::StringRef origin) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed)
    return error(origin, "not JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *object = parsed->getAsObject();
  if (!object)
    return error(origin, "not a JSON object");
  Config config;
  // In key order, so that the first error is always the same.
  std::vector<std::pair<std::string, const llvm::json::Value *>> entries;
  for (const auto &[key, value] : *object)
    entries.emplace_back(key.str(), &value);
  std::sort(entries.begin(), entries.end());
  for (const auto &[key, value] : entries)
    if (std::string problem = readKey(key, *value, config); !problem.empty())
      return error(origin, problem);
  if (std::string problem = config.problem(); !problem.empty())
    return error(origin, problem);
  return config;
}

llvm::Expected<Config> readNpuConfig(llvm::StringRef path) {
  if (path.empty())
    return Config();
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file = llvm::MemoryBuffer::getFile(path);
  if (!file)
    return error(path, "cannot read the NPU configuration: " + file.getError().message());
  return parseNpuConfig((*file)->getBuffer(), path);
}

} // namespace tessel::npu
