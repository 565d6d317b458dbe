// apps/qnum-convert/src/safetensors.hpp: memory-mapped, validated safetensors reading (qnum-convert and its tests).
//
// A safetensors file is: u64 little-endian header length n, n bytes of JSON
// {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {...}},
// then the data region; offsets are relative to the data region. open_safetensors() checks everything a
// lying or truncated file can get wrong before any tensor is read: header length within the file, valid
// JSON object, known dtype, non-negative shape whose byte size equals end - begin, begin <= end <= data
// size, and no two tensors overlapping. Errors are one line naming the file (and tensor).
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qconv {

// Element size in bytes of a safetensors dtype string; 0 when the dtype is unknown.
inline int dtype_size(const std::string& d) {
  static const std::map<std::string, int> sizes = {
      {"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4}, {"I64", 8}, {"U64", 8}, {"F64", 8}};
  auto it = sizes.find(d);
  return it == sizes.end() ? 0 : it->second;
}

struct tensor_info {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  // relative to the data region
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

// A read-only mapping of one safetensors file.
class safetensors_file {
 public:
  safetensors_file() = default;
  safetensors_file(const safetensors_file&) = delete;
  safetensors_file& operator=(const safetensors_file&) = delete;
  ~safetensors_file() {
    if (map_ != nullptr && map_ != MAP_FAILED) munmap(map_, size_);
    if (fd_ >= 0) close(fd_);
  }
  const std::string& path() const { return path_; }
  const std::vector<tensor_info>& tensors() const { return tensors_; }  // in data-offset order
  const nlohmann::ordered_json& metadata() const { return metadata_; }
  const std::uint8_t* data(const tensor_info& t) const { return base_ + data_start_ + t.begin; }
  // Tell the kernel the pages of t are not needed any more (keeps resident memory per tensor).
  void release(const tensor_info& t) const {
    const long pg = sysconf(_SC_PAGESIZE);
    std::uint64_t a = (data_start_ + t.begin) / pg * pg, b = data_start_ + t.end;
    if (b > a) madvise(const_cast<std::uint8_t*>(base_) + a, b - a, MADV_DONTNEED);
  }
  const tensor_info* find(const std::string& name) const {
    for (auto& t : tensors_)
      if (t.name == name) return &t;
    return nullptr;
  }

  // Opens and validates; on failure returns false with a one-line message in err.
  bool open(const std::string& path, std::string& err) {
    path_ = path;
    fd_ = ::open(path.c_str(), O_RDONLY);
    if (fd_ < 0) return fail(err, "cannot open: " + std::string(std::strerror(errno)));
    struct stat st;
    if (fstat(fd_, &st) != 0) return fail(err, "cannot stat");
    size_ = static_cast<std::uint64_t>(st.st_size);
    if (size_ < 8) return fail(err, "truncated file: " + std::to_string(size_) + " bytes, no header length");
    map_ = mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
    if (map_ == MAP_FAILED) return fail(err, "mmap failed");
    base_ = static_cast<const std::uint8_t*>(map_);
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | base_[i];
    if (n > size_ - 8) return fail(err, "truncated file or bad header: header length " + std::to_string(n) +
                                            " exceeds file size " + std::to_string(size_));
    data_start_ = 8 + n;
    const std::uint64_t data_size = size_ - data_start_;
    nlohmann::ordered_json h;
    try {
      h = nlohmann::ordered_json::parse(base_ + 8, base_ + 8 + n);
    } catch (const std::exception& e) {
      return fail(err, std::string("corrupt header JSON: ") + e.what());
    }
    if (!h.is_object()) return fail(err, "corrupt header: not a JSON object");
    for (auto it = h.begin(); it != h.end(); ++it) {
      if (it.key() == "__metadata__") {
        metadata_ = it.value();
        continue;
      }
      const std::string where = "tensor '" + it.key() + "': ";
      const auto& v = it.value();
      if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets") ||
          !v["dtype"].is_string() || !v["shape"].is_array() || !v["data_offsets"].is_array() ||
          v["data_offsets"].size() != 2)
        return fail(err, where + "malformed entry (needs dtype, shape, data_offsets[2])");
      tensor_info t;
      t.name = it.key();
      t.dtype = v["dtype"].get<std::string>();
      const int es = dtype_size(t.dtype);
      if (es == 0) return fail(err, where + "unsupported dtype '" + t.dtype + "'");
      std::uint64_t bytes = static_cast<std::uint64_t>(es);
      for (const auto& d : v["shape"]) {
        if (!d.is_number_integer() || d.get<std::int64_t>() < 0) return fail(err, where + "bad shape");
        t.shape.push_back(d.get<std::int64_t>());
        const std::uint64_t du = static_cast<std::uint64_t>(t.shape.back());
        if (du != 0 && bytes > (~0ull) / du) return fail(err, where + "shape overflows");
        bytes *= du;
      }
      for (const auto& o : v["data_offsets"])
        if (!o.is_number_unsigned() && !(o.is_number_integer() && o.get<std::int64_t>() >= 0))
          return fail(err, where + "bad data_offsets");
      t.begin = v["data_offsets"][0].get<std::uint64_t>();
      t.end = v["data_offsets"][1].get<std::uint64_t>();
      if (t.begin > t.end || t.end > data_size)
        return fail(err, where + "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                             "] out of range (data region is " + std::to_string(data_size) +
                             " bytes: truncated file or lying header)");
      if (t.end - t.begin != bytes)
        return fail(err, where + "data_offsets span " + std::to_string(t.end - t.begin) + " bytes but dtype/shape need " +
                             std::to_string(bytes));
      tensors_.push_back(std::move(t));
    }
    // By offset, header order among equal offsets: std::sort on (offset, position), as std::stable_sort
    // would; libstdc++ 12's stable_sort calls get_temporary_buffer, an error under clang 19 -Werror.
    std::vector<std::pair<std::uint64_t, std::size_t>> order;
    for (std::size_t i = 0; i < tensors_.size(); ++i) order.emplace_back(tensors_[i].begin, i);
    std::sort(order.begin(), order.end());
    std::vector<tensor_info> sorted;
    for (const auto& o : order) sorted.push_back(std::move(tensors_[o.second]));
    tensors_ = std::move(sorted);
    for (std::size_t i = 1; i < tensors_.size(); ++i)
      if (tensors_[i].begin < tensors_[i - 1].end && tensors_[i].end > tensors_[i].begin)
        return fail(err, "tensor '" + tensors_[i].name + "': data overlaps tensor '" + tensors_[i - 1].name + "'");
    return true;
  }

 private:
  bool fail(std::string& err, const std::string& msg) {
    err = path_ + ": " + msg;
    return false;
  }
  std::string path_;
  int fd_ = -1;
  void* map_ = nullptr;
  const std::uint8_t* base_ = nullptr;
  std::uint64_t size_ = 0, data_start_ = 0;
  std::vector<tensor_info> tensors_;
  nlohmann::ordered_json metadata_;
};

// Files of a checkpoint: a directory with model.safetensors.index.json (its weight_map's files, in
// first-appearance order), or a directory with *.safetensors, or one .safetensors file.
inline bool list_checkpoint(const std::string& in, std::vector<std::string>& files, std::string& err) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(in, ec)) {
    files.push_back(in);
    return true;
  }
  if (!fs::is_directory(in, ec)) {
    err = in + ": not a file or directory";
    return false;
  }
  const fs::path index = fs::path(in) / "model.safetensors.index.json";
  if (fs::exists(index, ec)) {
    std::ifstream f(index);
    nlohmann::ordered_json j;
    try {
      j = nlohmann::ordered_json::parse(f);
    } catch (const std::exception& e) {
      err = index.string() + ": corrupt JSON: " + e.what();
      return false;
    }
    if (!j.contains("weight_map") || !j["weight_map"].is_object()) {
      err = index.string() + ": no weight_map object";
      return false;
    }
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string()) {
        err = index.string() + ": tensor '" + it.key() + "': file name is not a string";
        return false;
      }
      const std::string p = (fs::path(in) / it.value().get<std::string>()).string();
      if (std::find(files.begin(), files.end(), p) == files.end()) files.push_back(p);
    }
    return true;
  }
  for (auto& e : fs::directory_iterator(in, ec))
    if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    err = in + ": no .safetensors files";
    return false;
  }
  return true;
}

}  // namespace qconv
