// bench/numerics.cpp: qnum-numerics, the error of every scheme x granularity x data distribution, with
// the fake-quant == dequantize(quantize) check as a column, a "which to pick" summary, CSV and markdown.
//
//   qnum-numerics [--rows R] [--cols C] [--data PATH] [--csv PATH] [--md PATH] [--quiet]
//
// All quantization goes through the library (qnum::quantize / dequantize / fake_quantize with the
// schemes of scale.hpp and presets.hpp); this file only generates data and measures.
// Exit status: 0 when every fake-quant/real-quant mismatch count is 0, 1 otherwise, 2 on bad arguments.
#include <qnum/presets.hpp>
#include <qnum/quantize_tensor.hpp>
#include <qnum/scale.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#ifndef QNUM_BENCH_DATA_DIR
#define QNUM_BENCH_DATA_DIR "bench/data"
#endif

namespace {

struct dataset {
  std::string name;
  std::int64_t rows = 0, cols = 0;
  std::vector<float> x;
};

struct result {
  std::string dist, format, gran;
  double bits_per_elem = 0;
  double sqnr_db = 0, mse = 0, max_abs = 0, max_rel = 0, sat = 0, zero = 0;
  std::int64_t mismatch = 0;
};

// ---- data -----------------------------------------------------------------------------------

template <class Dist>
dataset synth(const std::string& name, std::int64_t rows, std::int64_t cols, std::uint32_t seed, Dist d) {
  dataset ds{name, rows, cols, std::vector<float>(static_cast<std::size_t>(rows * cols))};
  std::mt19937 rng(seed);
  for (auto& v : ds.x) v = static_cast<float>(d(rng));
  return ds;
}

dataset laplace(std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
  dataset ds{"laplace", rows, cols, std::vector<float>(static_cast<std::size_t>(rows * cols))};
  std::mt19937 rng(seed);
  std::exponential_distribution<float> e(1.0f);
  std::bernoulli_distribution sign(0.5);
  for (auto& v : ds.x) v = sign(rng) ? e(rng) : -e(rng);
  return ds;
}

// Normal data where 4 input channels (columns) are 30x larger: the LLM activation outlier pattern.
dataset outlier_channels(std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
  dataset ds = synth("normal+outlier_ch", rows, cols, seed, std::normal_distribution<float>(0.0f, 1.0f));
  const std::int64_t ch[4] = {7 % cols, (cols / 5) % cols, (cols / 2 + 3) % cols, (cols - 9 + cols) % cols};
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c : ch) ds.x[static_cast<std::size_t>(r * cols + c)] *= 30.0f;
  return ds;
}

// bench/data/minilm_l0_ffn_up.bf16: u32 rows, u32 cols, then rows*cols bf16 little-endian.
bool real_weight(const std::string& path, dataset& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  unsigned char hdr[8];
  if (!f.read(reinterpret_cast<char*>(hdr), 8)) return false;
  auto u32 = [&](int o) { return std::uint32_t(hdr[o]) | std::uint32_t(hdr[o + 1]) << 8 | std::uint32_t(hdr[o + 2]) << 16 | std::uint32_t(hdr[o + 3]) << 24; };
  const std::int64_t rows = u32(0), cols = u32(4);
  if (rows <= 0 || cols <= 0 || rows * cols > (std::int64_t(1) << 28)) return false;
  std::vector<unsigned char> raw(static_cast<std::size_t>(rows * cols * 2));
  if (!f.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()))) return false;
  out.name = "minilm_l0_ffn_up";
  out.rows = rows;
  out.cols = cols;
  out.x.resize(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < out.x.size(); ++i)
    out.x[i] = qnum::from_bf16(static_cast<std::uint16_t>(raw[2 * i] | raw[2 * i + 1] << 8));
  return true;
}

// ---- measurement ----------------------------------------------------------------------------

struct gran {
  std::string name;
  qnum::group_shape g;
};

std::int64_t group_elems(const dataset& d, qnum::group_shape g) {
  const std::int64_t gr = g.rows == 0 ? d.rows : std::min(g.rows, d.rows);
  const std::int64_t gc = g.cols == 0 ? d.cols : std::min(g.cols, d.cols);
  return gr * gc;
}

// A code one step into the range from an extreme code (to measure the top quantization step).
template <class F>
bool is_extreme(const qnum::scheme<F>& s, std::uint8_t code) {
  if constexpr (F::is_integer) {
    const int q = qnum::code_to_int<F>(code);
    return q == s.code_min() || q == s.code_max();
  } else {
    constexpr std::uint32_t sign = 1u << (F::bits - 1);
    return (code & ~sign) == F::max_code;
  }
}
template <class F>
std::uint8_t step_inward(const qnum::scheme<F>& s, std::uint8_t code) {
  if constexpr (F::is_integer) {
    const int q = qnum::code_to_int<F>(code);
    const int q2 = q == s.code_max() ? q - 1 : q + 1;
    return static_cast<std::uint8_t>(static_cast<std::uint32_t>(q2) & ((1u << F::bits) - 1u));
  } else {
    return static_cast<std::uint8_t>(code - 1);  // sign-magnitude: one magnitude step down
  }
}

template <class F>
result measure(const std::string& fmt, const gran& gr, const qnum::scheme<F>& s, const dataset& d, bool two_level) {
  using namespace qnum;
  const std::int64_t n = d.rows * d.cols;
  const extent g = scale_shape(d.rows, d.cols, gr.g);
  if (g.rows == 0 && n > 0) { std::fprintf(stderr, "bad grid\n"); std::exit(2); }
  const int sb = dtype_bytes(s.store);
  const bool asym = s.kind == scheme_kind::asymmetric;
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(n)), codes2;
  std::vector<std::uint8_t> scales(static_cast<std::size_t>(g.rows * g.cols * sb));
  std::vector<std::int32_t> zeros(static_cast<std::size_t>(g.rows * g.cols));
  std::vector<float> deq(static_cast<std::size_t>(n)), fq(static_cast<std::size_t>(n)), deq2(static_cast<std::size_t>(n));
  const scale_view sv{scales.data(), g.rows, g.cols, g.cols, sb};
  const matrix_view<std::int32_t> zv{zeros.data(), g.rows, g.cols, g.cols, dtype::fp32};
  const matrix_view<const std::int32_t> zcv{zeros.data(), g.rows, g.cols, g.cols, dtype::fp32};
  const auto in = view<const float>(d.x.data(), d.rows, d.cols);
  float outer = 0.0f;
  if (two_level) {
    float amax = 0.0f;
    tensor_amax(in, amax);
    outer = presets::nvfp4_tensor_scale(amax);
  }
  status st = quantize(s, in, gr.g, view(codes.data(), d.rows, d.cols), sv, zv, nearest_even(), outer);
  if (st == status::ok) st = dequantize(s, view<const std::uint8_t>(codes.data(), d.rows, d.cols), gr.g, sv, zcv, view(deq.data(), d.rows, d.cols), outer);
  if (st == status::ok) st = fake_quantize(s, in, gr.g, view(fq.data(), d.rows, d.cols), nearest_even(), outer);
  // The inward neighbour of every extreme code, dequantized, gives the step at the top of the range.
  codes2 = codes;
  for (auto& c : codes2)
    if (is_extreme(s, c)) c = step_inward(s, c);
  if (st == status::ok) st = dequantize(s, view<const std::uint8_t>(codes2.data(), d.rows, d.cols), gr.g, sv, zcv, view(deq2.data(), d.rows, d.cols), outer);
  if (st != status::ok) {
    std::fprintf(stderr, "%s %s %s: %s\n", fmt.c_str(), gr.name.c_str(), d.name.c_str(), to_string(st));
    std::exit(2);
  }

  result r{d.name, fmt, gr.name};
  double sig = 0, err = 0, max_abs = 0, max_rel = 0;
  std::int64_t sat = 0, zero = 0, mism = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = d.x[static_cast<std::size_t>(i)], y = deq[static_cast<std::size_t>(i)];
    const double e = std::fabs(x - y);
    sig += x * x;
    err += e * e;
    max_abs = std::max(max_abs, e);
    if (x != 0) max_rel = std::max(max_rel, e / std::fabs(x));
    if (x != 0 && y == 0) ++zero;
    // Saturated: clipped at the end of the range by more than half the top step (not just rounded).
    if (is_extreme(s, codes[static_cast<std::size_t>(i)]) && std::fabs(x) > std::fabs(y) &&
        e > 0.5 * std::fabs(y - double(deq2[static_cast<std::size_t>(i)])))
      ++sat;
    if (detail::float_to_bits(fq[static_cast<std::size_t>(i)]) != detail::float_to_bits(deq[static_cast<std::size_t>(i)])) ++mism;
  }
  r.mse = err / double(n);
  r.sqnr_db = err > 0 ? 10.0 * std::log10(sig / err) : INFINITY;
  r.max_abs = max_abs;
  r.max_rel = max_rel;
  r.sat = double(sat) / double(n);
  r.zero = double(zero) / double(n);
  r.mismatch = mism;
  // Storage cost: element bits + (scale bits + zero-point bits at the element width) per group element.
  const double meta = 8.0 * sb + (asym ? F::bits : 0);
  r.bits_per_elem = F::bits + meta / double(group_elems(d, gr.g)) + (two_level ? 32.0 / double(n) : 0.0);
  return r;
}

// ---- output ---------------------------------------------------------------------------------

std::string fmt_g(double v, const char* f) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

void print_header(std::FILE* o) {
  std::fprintf(o, "%-18s %-16s %-10s %7s %8s %10s %9s %9s %7s %7s %5s\n", "distribution", "format", "granularity",
               "bits/el", "SQNR dB", "MSE", "max abs", "max rel", "sat %", "zero %", "mism");
}
void print_row(std::FILE* o, const result& r) {
  std::fprintf(o, "%-18s %-16s %-10s %7.3f %8.2f %10.3e %9.3e %9.3e %7.3f %7.3f %5lld\n", r.dist.c_str(), r.format.c_str(),
               r.gran.c_str(), r.bits_per_elem, r.sqnr_db, r.mse, r.max_abs, r.max_rel, 100 * r.sat, 100 * r.zero,
               static_cast<long long>(r.mismatch));
}

// Pareto front per distribution: configurations no cheaper-or-equal configuration beats in SQNR.
std::vector<result> pareto(const std::vector<result>& all, const std::string& dist) {
  std::vector<result> v;
  for (const auto& r : all)
    if (r.dist == dist) v.push_back(r);
  std::sort(v.begin(), v.end(), [](const result& a, const result& b) {
    return a.bits_per_elem != b.bits_per_elem ? a.bits_per_elem < b.bits_per_elem : a.sqnr_db > b.sqnr_db;
  });
  std::vector<result> front;
  double best = -1e300;
  for (const auto& r : v)
    if (r.sqnr_db > best + 0.05) {
      front.push_back(r);
      best = r.sqnr_db;
    }
  return front;
}

// Best SQNR within a storage budget (bits per element, scales included).
const result* best_under(const std::vector<result>& all, const std::string& dist, double budget) {
  const result* b = nullptr;
  for (const auto& r : all)
    if (r.dist == dist && r.bits_per_elem <= budget && (!b || r.sqnr_db > b->sqnr_db)) b = &r;
  return b;
}

void usage() {
  std::fprintf(stderr, "usage: qnum-numerics [--rows R] [--cols C] [--data PATH] [--csv PATH] [--md PATH] [--quiet]\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t rows = 256, cols = 512;
  std::string data = std::string(QNUM_BENCH_DATA_DIR) + "/minilm_l0_ffn_up.bf16";
  std::string csv = "qnum-numerics.csv", md = "qnum-numerics.md";
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { usage(); std::exit(2); }
      return argv[++i];
    };
    if (a == "--rows") rows = std::atoll(next().c_str());
    else if (a == "--cols") cols = std::atoll(next().c_str());
    else if (a == "--data") data = next();
    else if (a == "--csv") csv = next();
    else if (a == "--md") md = next();
    else if (a == "--quiet") quiet = true;
    else { usage(); return 2; }
  }
  if (rows <= 0 || cols <= 0) { usage(); return 2; }

  std::vector<dataset> sets;
  sets.push_back(synth("normal", rows, cols, 101, std::normal_distribution<float>(0.0f, 1.0f)));
  sets.push_back(laplace(rows, cols, 102));
  sets.push_back(synth("student_t3", rows, cols, 103, std::student_t_distribution<float>(3.0f)));
  sets.push_back(outlier_channels(rows, cols, 104));
  dataset real;
  const bool have_real = real_weight(data, real);
  if (have_real) sets.push_back(std::move(real));
  else std::fprintf(stderr, "note: real weight %s not found: that distribution is skipped\n", data.c_str());

  using namespace qnum;
  const std::vector<gran> grans = {{"tensor", per_tensor()}, {"row", per_row()}, {"1x32", group_size(32)},
                                   {"1x128", group_size(128)}, {"128x128", block(128, 128)}};
  const gran mx{"mx1x32", presets::mx_block};
  std::vector<result> all;
  for (const auto& d : sets) {
    for (const auto& gr : grans) {
      all.push_back(measure("int4_sym_restr", gr, symmetric_restricted<qint4>(), d, false));
      all.push_back(measure("int4_sym_full", gr, symmetric_full<qint4>(), d, false));
      all.push_back(measure("int4_asym", gr, asymmetric<quint4>(), d, false));
      all.push_back(measure("int8_sym", gr, symmetric_restricted<qint8>(), d, false));
      all.push_back(measure("int8_asym", gr, asymmetric<quint8>(), d, false));
      all.push_back(measure("fp8_e4m3", gr, float_amax<fp8_e4m3>(), d, false));
      all.push_back(measure("fp8_e5m2", gr, float_amax<fp8_e5m2>(), d, false));
      all.push_back(measure("fp4_e2m1", gr, float_amax<fp4_e2m1>(), d, false));
    }
    all.push_back(measure("fp8_e4m3/e8m0fl", mx, presets::mxfp8, d, false));
    all.push_back(measure("fp8_e4m3/e8m0rc", mx, presets::mxfp8_rceil, d, false));
    all.push_back(measure("fp8_e5m2/e8m0fl", mx, float_amax<fp8_e5m2>().with_pow2(pow2_rule::mx_floor), d, false));
    all.push_back(measure("fp8_e5m2/e8m0rc", mx, float_amax<fp8_e5m2>().with_pow2(pow2_rule::mx_rceil).x_multiply(), d, false));
    all.push_back(measure("fp4_e2m1/e8m0fl", mx, presets::mxfp4, d, false));
    all.push_back(measure("fp4_e2m1/e8m0rc", mx, presets::mxfp4_rceil, d, false));
    all.push_back(measure("fp4_e2m1/nvfp4", {"nv1x16+t", presets::nvfp4_block}, presets::nvfp4, d, true));
  }

  std::int64_t mismatches = 0;
  for (const auto& r : all) mismatches += r.mismatch;

  if (!quiet) {
    std::printf("qnum-numerics: error of quantizing a tensor (round to nearest even, fp32 scales unless noted)\n");
    for (const auto& d : sets)
      std::printf("  %-18s %lld x %lld\n", d.name.c_str(), static_cast<long long>(d.rows), static_cast<long long>(d.cols));
    std::printf("bits/el counts element bits + scale (+ zero point) bits per element. sat %% = clipped by more than\n"
                "half the top step; zero %% = nonzero input that dequantizes to 0; mism = elements where\n"
                "fake_quantize bits != dequantize(quantize) bits (must be 0).\n\n");
    print_header(stdout);
    std::string last;
    for (const auto& r : all) {
      if (r.dist != last && !last.empty()) std::printf("\n");
      last = r.dist;
      print_row(stdout, r);
    }
  }

  // Summary: Pareto front (bits/element vs SQNR) and best at common budgets.
  std::string summary;
  summary += "Which to pick (per distribution): best SQNR within a storage budget (bits/element incl. scales)\n";
  for (const auto& d : sets) {
    summary += "  " + d.name + ":\n";
    for (double budget : {4.3, 4.6, 5.0, 8.1, 8.3}) {
      const result* b = best_under(all, d.name, budget);
      if (b) summary += "    <= " + fmt_g(budget, "%.1f") + " bits: " + b->format + " " + b->gran + " (" + fmt_g(b->bits_per_elem, "%.3f") +
                        " b/el, " + fmt_g(b->sqnr_db, "%.2f") + " dB)\n";
    }
    summary += "    Pareto front:";
    for (const auto& r : pareto(all, d.name))
      summary += " " + r.format + "/" + r.gran + "(" + fmt_g(r.bits_per_elem, "%.2f") + "b," + fmt_g(r.sqnr_db, "%.1f") + "dB)";
    summary += "\n";
  }
  std::printf("\n%s", summary.c_str());
  std::printf("\nfake-quant vs real-quant mismatching elements, all rows: %lld\n", static_cast<long long>(mismatches));

  if (std::FILE* f = std::fopen(csv.c_str(), "w")) {
    std::fprintf(f, "distribution,format,granularity,bits_per_elem,sqnr_db,mse,max_abs_err,max_rel_err,frac_saturated,frac_zero_flushed,fake_vs_real_mismatch\n");
    for (const auto& r : all)
      std::fprintf(f, "%s,%s,%s,%.4f,%.4f,%.6e,%.6e,%.6e,%.6e,%.6e,%lld\n", r.dist.c_str(), r.format.c_str(), r.gran.c_str(),
                   r.bits_per_elem, r.sqnr_db, r.mse, r.max_abs, r.max_rel, r.sat, r.zero, static_cast<long long>(r.mismatch));
    std::fclose(f);
    std::printf("wrote %s\n", csv.c_str());
  } else {
    std::fprintf(stderr, "cannot write %s\n", csv.c_str());
  }
  if (std::FILE* f = std::fopen(md.c_str(), "w")) {
    std::fprintf(f, "| distribution | format | granularity | bits/el | SQNR dB | MSE | max abs | max rel | sat %% | zero %% | mismatch |\n");
    std::fprintf(f, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const auto& r : all)
      std::fprintf(f, "| %s | %s | %s | %.3f | %.2f | %.3e | %.3e | %.3e | %.3f | %.3f | %lld |\n", r.dist.c_str(), r.format.c_str(),
                   r.gran.c_str(), r.bits_per_elem, r.sqnr_db, r.mse, r.max_abs, r.max_rel, 100 * r.sat, 100 * r.zero,
                   static_cast<long long>(r.mismatch));
    std::fprintf(f, "\n```\n%s```\n", summary.c_str());
    std::fclose(f);
    std::printf("wrote %s\n", md.c_str());
  } else {
    std::fprintf(stderr, "cannot write %s\n", md.c_str());
  }
  return mismatches == 0 ? 0 : 1;
}
