// bench/bench_util.hpp: Google Benchmark helpers: byte/element counters and a reporter that prints,
// after the run, each benchmark's bandwidth as a ratio to the same-run baselines of its size class.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace qbench {

// Record elements/s and bytes/s (every byte read and written) for one iteration's work.
inline void set_counters(benchmark::State& st, std::int64_t elements, std::int64_t bytes) {
  st.SetItemsProcessed(st.iterations() * elements);
  st.SetBytesProcessed(st.iterations() * bytes);
}

// A vector whose storage is aligned to 64 bytes, as tensor allocators align every tensor, input and output alike
// (PyTorch's CPU allocator: 64): every buffer of the benchmarks, so that the library's aligned-output paths
// (streaming stores) are what they measure, and so that large buffers share one offset in their pages (glibc maps
// each on pages of its own), which from DRAM decides how loads and stores alias modulo 4 KiB (docs/performance.md).
// Elements are value-initialised (zero) on construction.
template <class T>
struct aligned_allocator {
  using value_type = T;
  aligned_allocator() = default;
  template <class U>
  aligned_allocator(const aligned_allocator<U>&) {}
  T* allocate(std::size_t n) {
    void* p = std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) { std::free(p); }
  template <class U>
  bool operator==(const aligned_allocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const aligned_allocator<U>&) const { return false; }
};
template <class T>
using aligned_vector = std::vector<T, aligned_allocator<T>>;

inline std::vector<float> normal_data(std::size_t n, std::uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Collects bytes_per_second and items_per_second per benchmark (the median aggregate when repetitions are
// used) and, at the end, prints each benchmark's rates and its ratios to the baselines of its size:
// "copy/<size>" (by bytes, and by elements: the host targets are stated as element rates against the fp32
// copy's), "scalar_<op>/<size>" and, where the program ran it, ggml's SIMD Q8_0 "ggml_q8_0_fp32/<size>"
// (by elements).
class ratio_reporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name != "median") continue;
      auto it = r.counters.find("bytes_per_second");
      if (it == r.counters.end()) continue;
      std::string name = r.benchmark_name();
      const auto us = name.find("_median");
      if (us != std::string::npos) name.erase(us);
      for (const char* suffix : {"/real_time", "/process_time"}) {  // UseRealTime() etc. append these
        const auto k = name.rfind(suffix);
        if (k != std::string::npos && k + std::string(suffix).size() == name.size()) name.erase(k);
      }
      bw_[name] = it->second.value;
      const auto el = r.counters.find("items_per_second");
      el_[name] = el == r.counters.end() ? 0.0 : el->second.value;
      order_.push_back(name);
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\n%-46s %8s %8s %8s %8s %9s %8s\n", "benchmark", "GB/s", "G el/s", "vs copy", "el/copy",
                "vs scalar", "vs ggml");
    std::vector<std::string> seen;
    for (const auto& name : order_) {
      if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
      seen.push_back(name);
      const std::string size = name.substr(name.rfind('/') + 1);
      const double bw = bw_[name], el = el_[name];
      const double copy = lookup(bw_, "copy/", size), copy_el = lookup(el_, "copy/", size);
      const double scalar = lookup(bw_, scalar_name(name), size);
      const double ggml = lookup(el_, "ggml_q8_0_fp32/", size);
      std::printf("%-46s %8.2f %8.3f %7.0f%% %7.0f%% %8.2fx %7.2fx\n", name.c_str(), bw / 1e9, el / 1e9,
                  copy > 0 ? 100.0 * bw / copy : 0.0, copy_el > 0 ? 100.0 * el / copy_el : 0.0,
                  scalar > 0 ? bw / scalar : 0.0, ggml > 0 ? el / ggml : 0.0);
    }
  }

 private:
  // "quantize_g128_fp32/4096" -> baseline "scalar_quantize_g128_fp32/"
  static std::string scalar_name(const std::string& name) {
    const std::string op = name.substr(0, name.find('/'));
    return "scalar_" + op + "/";
  }
  static double lookup(const std::map<std::string, double>& m, const std::string& prefix, const std::string& size) {
    auto it = m.find(prefix + size);
    return it == m.end() ? 0.0 : it->second;
  }
  std::map<std::string, double> bw_, el_;
  std::vector<std::string> order_;
};

inline int run_with_ratios(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ratio_reporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  benchmark::Shutdown();
  return 0;
}

}  // namespace qbench
