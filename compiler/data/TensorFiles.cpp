//===- TensorFiles.cpp - Tensors from and to .pb and .npy files -----------===//

#include "compiler/data/TensorFiles.h"

#include "onnx/onnx-data_pb.h"

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace tessel::data {

size_t HostTensor::elementCount() const {
  size_t count = 1;
  for (int64_t dim : shape)
    count *= static_cast<size_t>(dim);
  return count;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

namespace {

/// The tensor's element count, refusing negative dimensions and counts no
/// file could hold (the check also keeps the products from overflowing).
size_t checkedElementCount(const HostTensor &tensor, const std::string &path) {
  constexpr uint64_t kMaxElements = uint64_t(1) << 40;
  uint64_t count = 1;
  for (int64_t dim : tensor.shape) {
    if (dim < 0)
      throw std::runtime_error(path + ": dimension " + std::to_string(dim) + " of shape " +
                               formatShape(tensor.shape) + " is negative");
    if (dim != 0 && count > kMaxElements / static_cast<uint64_t>(dim))
      throw std::runtime_error(path + ": shape " + formatShape(tensor.shape) +
                               " has more than 2^40 elements");
    count *= static_cast<uint64_t>(dim);
  }
  return count;
}

std::string readFile(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw std::runtime_error(path + ": cannot open");
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

tsl_dtype dtypeOfOnnx(int32_t type, const std::string &path) {
  using onnx::TensorProto;
  static const std::map<int32_t, tsl_dtype> types = {
      {TensorProto::FLOAT, TSL_F32},   {TensorProto::DOUBLE, TSL_F64},
      {TensorProto::FLOAT16, TSL_F16}, {TensorProto::BFLOAT16, TSL_BF16},
      {TensorProto::INT8, TSL_I8},     {TensorProto::INT16, TSL_I16},
      {TensorProto::INT32, TSL_I32},   {TensorProto::INT64, TSL_I64},
      {TensorProto::UINT8, TSL_U8},    {TensorProto::UINT16, TSL_U16},
      {TensorProto::UINT32, TSL_U32},  {TensorProto::UINT64, TSL_U64},
      {TensorProto::BOOL, TSL_BOOL},
      // Newer than the ONNX headers Tessel builds against; ONNX's numbers.
      {17, TSL_F8E4M3FN}, {18, TSL_F8E4M3FNUZ}, {19, TSL_F8E5M2},
      {20, TSL_F8E5M2FNUZ}, {21, TSL_U4}, {22, TSL_I4}, {23, TSL_F4E2M1FN},
      {25, TSL_U2}, {26, TSL_I2}};
  auto it = types.find(type);
  if (it == types.end())
    throw std::runtime_error(path + ": tensor data type " + std::to_string(type) +
                             " is not supported");
  return it->second;
}

template <typename Field>
void packField(const Field &field, size_t elementBytes, std::vector<uint8_t> &out) {
  out.resize(field.size() * elementBytes);
  for (int i = 0; i < field.size(); ++i) {
    auto value = field.Get(i);
    std::memcpy(out.data() + i * elementBytes, &value, elementBytes);
  }
}

/// Bits per element of the types ONNX packs several to a byte; 0 otherwise.
unsigned packedBits(tsl_dtype dtype) {
  switch (dtype) {
  case TSL_I4:
  case TSL_U4:
  case TSL_F4E2M1FN:
    return 4;
  case TSL_I2:
  case TSL_U2:
    return 2;
  default:
    return 0;
  }
}

/// ONNX packs 4- and 2-bit elements low bits first; a HostTensor holds one
/// per byte, signed integers sign-extended, as the runtime does.
std::vector<uint8_t> unpackElements(const std::vector<uint8_t> &packed, tsl_dtype dtype,
                                    size_t count) {
  unsigned bits = packedBits(dtype), perByte = 8 / bits, shift = 8 - bits;
  bool isSigned = dtype == TSL_I4 || dtype == TSL_I2;
  std::vector<uint8_t> elements(count);
  for (size_t i = 0; i < count; ++i) {
    auto high = static_cast<uint8_t>((packed[i / perByte] >> (i % perByte * bits)) << shift);
    elements[i] = isSigned ? static_cast<uint8_t>(static_cast<int8_t>(high) >> shift)
                           : static_cast<uint8_t>(high >> shift);
  }
  return elements;
}

/// The tensor `proto` holds; `path` names where it comes from in messages.
HostTensor hostTensorOf(const onnx::TensorProto &proto, const std::string &path) {
  HostTensor tensor;
  tensor.name = proto.name();
  tensor.dtype = dtypeOfOnnx(proto.data_type(), path);
  tensor.shape.assign(proto.dims().begin(), proto.dims().end());
  size_t elementBytes = tsl_dtype_size(tensor.dtype);
  if (proto.has_raw_data()) {
    tensor.bytes.assign(proto.raw_data().begin(), proto.raw_data().end());
  } else {
    switch (proto.data_type()) {
    case onnx::TensorProto::FLOAT:
      packField(proto.float_data(), 4, tensor.bytes);
      break;
    case onnx::TensorProto::DOUBLE:
      packField(proto.double_data(), 8, tensor.bytes);
      break;
    case onnx::TensorProto::INT64:
      packField(proto.int64_data(), 8, tensor.bytes);
      break;
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      packField(proto.uint64_data(), elementBytes, tensor.bytes);
      break;
    default:
      packField(proto.int32_data(), elementBytes, tensor.bytes);
      break;
    }
  }
  size_t count = checkedElementCount(tensor, path);
  unsigned bits = packedBits(tensor.dtype);
  size_t storedBytes = bits ? (count * bits + 7) / 8 : count * elementBytes;
  if (tensor.bytes.size() != storedBytes)
    throw std::runtime_error(path + ": holds " + std::to_string(tensor.bytes.size()) +
                             " bytes but its shape needs " + std::to_string(storedBytes));
  if (bits)
    tensor.bytes = unpackElements(tensor.bytes, tensor.dtype, count);
  return tensor;
}

/// The tensors of `sequence`, each named after `path` and its position.
std::vector<HostTensor> sequenceTensors(const onnx::SequenceProto &sequence,
                                        const std::string &path) {
  if (sequence.elem_type() != onnx::SequenceProto::TENSOR &&
      sequence.elem_type() != onnx::SequenceProto::UNDEFINED)
    throw std::runtime_error(path + ": a sequence of other than tensors is not supported");
  std::vector<HostTensor> tensors;
  for (int i = 0; i < sequence.tensor_values_size(); ++i)
    tensors.push_back(
        hostTensorOf(sequence.tensor_values(i), path + " (tensor " + std::to_string(i) + ")"));
  return tensors;
}

} // namespace

HostTensor readTensorProto(const std::string &path) {
  onnx::TensorProto proto;
  if (!proto.ParseFromString(readFile(path)))
    throw std::runtime_error(path + ": not a serialized onnx.TensorProto");
  return hostTensorOf(proto, path);
}

ValueFile readValueProto(const std::string &path, ValueKind kind) {
  std::string bytes = readFile(path);
  ValueFile value;
  if (kind == ValueKind::Tensor) {
    value.tensors.push_back(readTensorProto(path));
    value.name = value.tensors.front().name;
    return value;
  }
  if (kind == ValueKind::Sequence) {
    onnx::SequenceProto proto;
    if (!proto.ParseFromString(bytes))
      throw std::runtime_error(path + ": not a serialized onnx.SequenceProto");
    value.name = proto.name();
    value.tensors = sequenceTensors(proto, path);
    return value;
  }
  onnx::OptionalProto proto;
  if (!proto.ParseFromString(bytes))
    throw std::runtime_error(path + ": not a serialized onnx.OptionalProto");
  value.name = proto.name();
  if (proto.has_tensor_value())
    value.tensors.push_back(hostTensorOf(proto.tensor_value(), path));
  else if (proto.has_sequence_value())
    value.tensors = sequenceTensors(proto.sequence_value(), path);
  else if (proto.has_map_value() || proto.has_optional_value() || proto.has_sparse_tensor_value())
    throw std::runtime_error(path + ": an optional of other than a tensor or a sequence of "
                                    "tensors is not supported");
  else
    value.present = false;
  return value;
}

namespace {

const std::map<std::string, tsl_dtype> &npyTypes() {
  static const std::map<std::string, tsl_dtype> types = {
      {"<f4", TSL_F32}, {"<f8", TSL_F64}, {"<f2", TSL_F16}, {"|i1", TSL_I8},
      {"<i2", TSL_I16}, {"<i4", TSL_I32}, {"<i8", TSL_I64}, {"|u1", TSL_U8},
      {"<u2", TSL_U16}, {"<u4", TSL_U32}, {"<u8", TSL_U64}, {"|b1", TSL_BOOL}};
  return types;
}

/// The value of `key` in the .npy header dictionary, e.g. 'descr'.
std::string headerField(const std::string &header, const std::string &key,
                        const std::string &path) {
  auto malformed = [&] {
    return std::runtime_error(path + ": .npy header has no value for '" + key + "'");
  };
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    throw std::runtime_error(path + ": .npy header lacks '" + key + "'");
  size_t colon = header.find(':', at);
  size_t begin = colon == std::string::npos ? colon : header.find_first_not_of(" ", colon + 1);
  if (begin == std::string::npos)
    throw malformed();
  size_t end = header.find_first_of(header[begin] == '(' ? ")" : ",}", begin);
  if (end == std::string::npos)
    throw malformed();
  if (header[begin] == '(')
    return header.substr(begin + 1, end - begin - 1);
  std::string value = header.substr(begin, end - begin);
  value.erase(value.find_last_not_of(" ") + 1);
  if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'')
    value = value.substr(1, value.size() - 2);
  return value;
}

} // namespace

HostTensor readNpy(const std::string &path) {
  std::string data = readFile(path);
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0)
    throw std::runtime_error(path + ": not a .npy file");
  int major = static_cast<unsigned char>(data[6]);
  size_t headerLength, headerStart;
  if (major == 1) {
    headerLength = static_cast<unsigned char>(data[8]) |
                   static_cast<unsigned char>(data[9]) << 8;
    headerStart = 10;
  } else {
    if (data.size() < 12)
      throw std::runtime_error(path + ": truncated .npy header");
    uint32_t length;
    std::memcpy(&length, &data[8], 4);
    headerLength = length;
    headerStart = 12;
  }
  if (headerStart + headerLength > data.size())
    throw std::runtime_error(path + ": truncated .npy header");
  std::string header = data.substr(headerStart, headerLength);
  HostTensor tensor;
  std::string descr = headerField(header, "descr", path);
  auto type = npyTypes().find(descr);
  if (type == npyTypes().end())
    throw std::runtime_error(path + ": .npy element type '" + descr +
                             "' is not supported");
  tensor.dtype = type->second;
  if (headerField(header, "fortran_order", path) != "False")
    throw std::runtime_error(path + ": Fortran-ordered arrays are not supported");
  std::stringstream dims(headerField(header, "shape", path));
  std::string dim;
  while (std::getline(dims, dim, ',')) {
    size_t first = dim.find_first_not_of(" "), last = dim.find_last_not_of(" ");
    if (first == std::string::npos)
      continue;
    std::string digits = dim.substr(first, last - first + 1);
    // Up to 18 digits: every such number fits int64_t.
    if (digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos)
      throw std::runtime_error(path + ": .npy shape entry '" + digits + "' is not a dimension");
    tensor.shape.push_back(std::stoll(digits));
  }
  size_t bytes = checkedElementCount(tensor, path) * tsl_dtype_size(tensor.dtype);
  size_t dataStart = headerStart + headerLength;
  if (data.size() - dataStart != bytes)
    throw std::runtime_error(path + ": holds " + std::to_string(data.size() - dataStart) +
                             " bytes of data but its shape needs " + std::to_string(bytes));
  tensor.bytes.assign(data.begin() + dataStart, data.end());
  return tensor;
}

bool hasNpyType(tsl_dtype dtype) {
  for (const auto &[name, type] : npyTypes())
    if (type == dtype)
      return true;
  return false;
}

void writeNpy(const std::string &path, const HostTensor &tensor) {
  std::string descr;
  for (const auto &[name, dtype] : npyTypes())
    if (dtype == tensor.dtype)
      descr = name;
  if (descr.empty())
    throw std::runtime_error(path + ": " + tsl_dtype_name(tensor.dtype) +
                             " has no .npy type");
  std::string shape;
  for (int64_t dim : tensor.shape)
    shape += std::to_string(dim) + ", ";
  if (tensor.shape.size() > 1)
    shape.resize(shape.size() - 2);
  else if (tensor.shape.size() == 1)
    shape.resize(shape.size() - 1);
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" +
                       shape + "), }";
  // Pad with spaces so that the data starts 64-byte aligned.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream file(path, std::ios::binary);
  if (!file)
    throw std::runtime_error(path + ": cannot create");
  uint16_t length = header.size();
  file.write("\x93NUMPY\x01\x00", 8);
  file.write(reinterpret_cast<const char *>(&length), 2);
  file << header;
  file.write(reinterpret_cast<const char *>(tensor.bytes.data()), tensor.bytes.size());
  if (!file)
    throw std::runtime_error(path + ": write failed");
}

HostTensor readTensorFile(const std::string &path) {
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".npy") == 0)
    return readNpy(path);
  return readTensorProto(path);
}

} // namespace tessel::data
