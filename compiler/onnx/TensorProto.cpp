//===- TensorProto.cpp - ONNX tensors and types as MLIR ones --------------===//

#include "compiler/onnx/TensorProto.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir;

namespace tessel::onnx_import {

Type elementTypeFor(MLIRContext *context, int32_t dataType) {
  using onnx::TensorProto;
  auto integer = [&](unsigned width, bool isUnsigned) -> Type {
    return IntegerType::get(context, width,
                            isUnsigned ? IntegerType::Unsigned
                                       : IntegerType::Signless);
  };
  switch (dataType) {
  case TensorProto::FLOAT:
    return Float32Type::get(context);
  case TensorProto::DOUBLE:
    return Float64Type::get(context);
  case TensorProto::FLOAT16:
    return Float16Type::get(context);
  case TensorProto::BFLOAT16:
    return BFloat16Type::get(context);
  case TensorProto::INT8:
    return integer(8, false);
  case TensorProto::INT16:
    return integer(16, false);
  case TensorProto::INT32:
    return integer(32, false);
  case TensorProto::INT64:
    return integer(64, false);
  case TensorProto::UINT8:
    return integer(8, true);
  case TensorProto::UINT16:
    return integer(16, true);
  case TensorProto::UINT32:
    return integer(32, true);
  case TensorProto::UINT64:
    return integer(64, true);
  case TensorProto::BOOL:
    return integer(1, false);
  case kInt4:
    return integer(4, false);
  case kUInt4:
    return integer(4, true);
  case kInt2:
    return integer(2, false);
  case kUInt2:
    return integer(2, true);
  case kFloat8E4M3FN:
    return Float8E4M3FNType::get(context);
  case kFloat8E4M3FNUZ:
    return Float8E4M3FNUZType::get(context);
  case kFloat8E5M2:
    return Float8E5M2Type::get(context);
  case kFloat8E5M2FNUZ:
    return Float8E5M2FNUZType::get(context);
  case kFloat4E2M1:
    return Float4E2M1FNType::get(context);
  default:
    return {};
  }
}

int32_t dataTypeOf(Type type) {
  for (int32_t dataType = onnx::TensorProto::FLOAT; dataType <= kInt2; ++dataType)
    if (Type candidate = elementTypeFor(type.getContext(), dataType); candidate == type)
      return dataType;
  return onnx::TensorProto::UNDEFINED;
}

std::string dataTypeName(int32_t dataType) {
  if (onnx::TensorProto::DataType_IsValid(dataType))
    return onnx::TensorProto::DataType_Name(
        static_cast<onnx::TensorProto::DataType>(dataType));
  static const char *const newer[] = {
      "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",
      "INT4",         "FLOAT4E2M1",     "FLOAT8E8M0", "UINT2",          "INT2"};
  if (dataType >= kFloat8E4M3FN && dataType <= kInt2)
    return newer[dataType - kFloat8E4M3FN];
  return "data type " + std::to_string(dataType);
}

namespace {

llvm::Error tensorError(const onnx::TensorProto &tensor, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "tensor '" + tensor.name() + "': " + message);
}

/// Reads [offset, offset + length) of an external data file that must lie
/// inside the model's directory.
llvm::Expected<std::string> readExternalData(const onnx::TensorProto &tensor,
                                             llvm::StringRef modelDirectory) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset" || entry.key() == "length") {
      uint64_t value;
      if (llvm::StringRef(entry.value()).getAsInteger(10, value))
        return tensorError(tensor, "external data " + entry.key() + " '" +
                                       entry.value() + "' is not a number");
      if (entry.key() == "offset")
        offset = value;
      else
        length = value;
    }
  }
  if (location.empty())
    return tensorError(tensor, "external data has no location");
  if (llvm::sys::path::is_absolute(location))
    return tensorError(tensor, "external data location '" + location +
                                   "' is absolute; it must be relative to the model");

  llvm::SmallString<256> directory, path;
  if (llvm::sys::fs::real_path(modelDirectory, directory))
    return tensorError(tensor, "cannot resolve the model directory");
  llvm::SmallString<256> joined(directory);
  llvm::sys::path::append(joined, location);
  if (std::error_code error = llvm::sys::fs::real_path(joined, path))
    return tensorError(tensor, "external data file '" + location +
                                   "' cannot be opened: " + error.message());
  // The resolved path (symlinks included) must stay inside the directory.
  llvm::StringRef resolved = path;
  if (!resolved.starts_with(directory) ||
      (resolved.size() > directory.size() &&
       !llvm::sys::path::is_separator(resolved[directory.size()])))
    return tensorError(tensor, "external data location '" + location +
                                   "' leaves the model's directory");

  // A FIFO or device would block the read or never end it.
  if (!llvm::sys::fs::is_regular_file(path))
    return tensorError(tensor, "external data location '" + location + "' is not a regular file");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!file)
    return tensorError(tensor, "cannot read external data file '" + location +
                                   "': " + file.getError().message());
  uint64_t size = (*file)->getBufferSize();
  uint64_t count = length.value_or(offset <= size ? size - offset : 0);
  if (offset > size || count > size - offset)
    return tensorError(tensor, "external data range [" + llvm::Twine(offset) +
                                   ", " + llvm::Twine(offset + count) +
                                   ") exceeds file '" + location + "' of " +
                                   llvm::Twine(size) + " bytes");
  return std::string((*file)->getBufferStart() + offset, count);
}

/// Converts `count` values of a repeated proto field into little-endian
/// elements of `bytes` bytes each.
template <typename Field>
std::string packField(const Field &field, size_t bytes) {
  std::string raw(field.size() * bytes, '\0');
  for (int i = 0; i < field.size(); ++i) {
    auto value = field.Get(i);
    std::memcpy(&raw[i * bytes], &value, bytes); // little-endian truncation
  }
  return raw;
}

/// One byte per element, the value in its low bits, from `count` elements
/// of `bits` bits packed low bits first.
std::string unpackSubByte(const std::string &packed, unsigned bits, int64_t count) {
  std::string bytes(count, '\0');
  unsigned perByte = 8 / bits, mask = (1u << bits) - 1;
  for (int64_t i = 0; i < count; ++i) {
    unsigned byte = static_cast<unsigned char>(packed[i / perByte]);
    bytes[i] = static_cast<char>((byte >> (i % perByte * bits)) & mask);
  }
  return bytes;
}

} // namespace

llvm::Expected<DenseElementsAttr> readTensor(MLIRContext *context,
                                             const onnx::TensorProto &tensor,
                                             llvm::StringRef modelDirectory) {
  using onnx::TensorProto;
  Type elementType = elementTypeFor(context, tensor.data_type());
  if (!elementType)
    return tensorError(tensor, "element type " +
                                   dataTypeName(tensor.data_type()) +
                                   " is not supported");
  if (tensor.has_segment())
    return tensorError(tensor, "segmented tensors are not supported");
  SmallVector<int64_t> shape;
  int64_t count = 1;
  for (int64_t dim : tensor.dims()) {
    if (dim < 0)
      return tensorError(tensor, "negative dimension " + llvm::Twine(dim));
    if (dim != 0 && count > (int64_t{1} << 40) / dim)
      return tensorError(tensor, "too many elements");
    count *= dim;
    shape.push_back(dim);
  }
  auto type = RankedTensorType::get(shape, elementType);
  unsigned elementBits = elementType.getIntOrFloatBitWidth();
  size_t elementBytes = llvm::divideCeil(elementBits, 8);
  // 4- and 2-bit types pack 2 or 4 elements into each byte, low bits first.
  bool packed = elementBits < 8 && !elementType.isInteger(1);
  size_t storedBytes = packed ? llvm::divideCeil(count * elementBits, 8) : count * elementBytes;

  // Gather the little-endian bytes from wherever the proto keeps them.
  std::string raw;
  if (tensor.data_location() == TensorProto::EXTERNAL) {
    llvm::Expected<std::string> data = readExternalData(tensor, modelDirectory);
    if (!data)
      return data.takeError();
    raw = std::move(*data);
  } else if (tensor.has_raw_data()) {
    raw = tensor.raw_data();
  } else {
    switch (tensor.data_type()) {
    case TensorProto::FLOAT:
      raw = packField(tensor.float_data(), 4);
      break;
    case TensorProto::DOUBLE:
      raw = packField(tensor.double_data(), 8);
      break;
    case TensorProto::INT64:
      raw = packField(tensor.int64_data(), 8);
      break;
    case TensorProto::UINT32:
    case TensorProto::UINT64:
      raw = packField(tensor.uint64_data(), elementBytes);
      break;
    default: // int8/16/32, uint8/16, bool, float16, bfloat16 and float8 bits;
             // one packed byte per entry for 4- and 2-bit types
      raw = packField(tensor.int32_data(), elementBytes);
      break;
    }
  }
  if (raw.size() != storedBytes)
    return tensorError(tensor, "holds " + llvm::Twine(raw.size()) +
                                   " bytes of data but its shape needs " +
                                   llvm::Twine(storedBytes));
  if (packed)
    raw = unpackSubByte(raw, elementBits, count);

  if (elementType.isInteger(1)) {
    SmallVector<bool> values;
    for (char byte : raw)
      values.push_back(byte != 0);
    return DenseElementsAttr::get(type, values);
  }
  return DenseElementsAttr::getFromRawBuffer(type,
                                             ArrayRef<char>(raw.data(), raw.size()));
}

} // namespace tessel::onnx_import
