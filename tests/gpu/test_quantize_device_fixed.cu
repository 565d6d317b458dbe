// tests/gpu/test_quantize_device_fixed.cu: compile-time schemes (fixed_scheme) on the device give the host
// API's bits on every kernel path (1xG registers, whole-group fast path, block kernel, per tensor, 2D blocks)
// and element type.
#include "quantize_check.cuh"

using namespace qtest;

TEST_CASE("fixed_scheme (compile-time fields) == host, every kernel path and element type") {
  namespace p = qnum::presets;
  using qnum::fixed_scheme;
  using qnum::dtype;
  check_holder<fixed_scheme<p::int8_sym>, std::uint16_t>("int8 sym g128 bf16", fixed_scheme<p::int8_sym>{}, 9, 300, 304, qnum::group_size(128));
  check_holder<fixed_scheme<p::int8_sym>, float, std::uint16_t>("int8 sym g32 fp32 -> bf16", fixed_scheme<p::int8_sym>{}, 7, 100, 100,
                                                             qnum::group_size(32));
  check_holder<fixed_scheme<p::slime_int4_qat>, std::uint16_t, std::uint16_t>("slime g32 bf16", fixed_scheme<p::slime_int4_qat>{},
                                                                              9, 96, 96, qnum::group_size(32));
  check_holder<fixed_scheme<p::slime_int4_qat>, std::uint16_t>("slime g32 fp16 in", fixed_scheme<p::slime_int4_qat>{}, 5, 70, 72,
                                                               qnum::group_size(32), false, dtype::fp16);
  check_holder<fixed_scheme<p::ct_w4a16_asym>, float>("ct asym g128 fp32", fixed_scheme<p::ct_w4a16_asym>{}, 8, 300, 300,
                                                      p::ct_group128);
  // Mostly finite groups (one element in ~500 special): asymmetric groups without NaN whose ends need no clamp
  // take the unclamped path of the whole-group kernel (g128 bf16: 4 lanes x 4 chunks), others clamp, and groups
  // with a NaN or an infinity recompute their statistics; codes, zero points and fake quantization == host.
  check_holder<fixed_scheme<p::ct_w4a16_asym>, std::uint16_t>("ct asym g128 bf16, mostly finite", fixed_scheme<p::ct_w4a16_asym>{},
                                                              24, 1024, 1024, p::ct_group128, false, dtype::bf16, false, 4099);
  check_holder<fixed_scheme<p::torchao_uint4_asym>, std::uint16_t>("torchao uint4 asym g128 bf16, mostly finite",
                                                                   fixed_scheme<p::torchao_uint4_asym>{}, 24, 1024, 1024,
                                                                   qnum::group_size(128), false, dtype::bf16, false, 4099);
  check_holder<fixed_scheme<p::ct_w4a16_asym>, float>("ct asym g128 fp32, mostly finite", fixed_scheme<p::ct_w4a16_asym>{}, 12,
                                                      1024, 1024, p::ct_group128, false, dtype::bf16, false, 4099);
  check_holder<fixed_scheme<p::deepgemm_fp8>, std::uint16_t>("deepgemm 1x128", fixed_scheme<p::deepgemm_fp8>{}, 9, 200, 200,
                                                             p::deepseek_act);
  check_holder<fixed_scheme<p::deepgemm_fp8>, float>("deepgemm 128x128 fp32", fixed_scheme<p::deepgemm_fp8>{}, 129, 131, 131,
                                                     p::deepseek_weight);
  check_holder<fixed_scheme<p::torchao_int8_sym>, std::uint16_t>("per-row long", fixed_scheme<p::torchao_int8_sym>{}, 3, 5000,
                                                                 5000, qnum::per_row());
  check_holder<fixed_scheme<p::te_fp8_current>, float>("te per tensor, two kernels", fixed_scheme<p::te_fp8_current>{}, 33, 1000,
                                                       1003, qnum::per_tensor(), true);
  // Contiguous rows, inputs and outputs (the flat loops of the statistics and quantize kernels): mostly finite
  // (most blocks keep the fast statistics, some recompute them) and with many specials, fp32 and bf16; rows of
  // 1001 (not whole chunks) take the row loops.
  check_holder<fixed_scheme<p::te_fp8_current>, float>("te per tensor, contiguous, mostly finite", fixed_scheme<p::te_fp8_current>{},
                                                       64, 1000, 1000, qnum::per_tensor(), true, dtype::bf16, false, 65536, true);
  check_holder<fixed_scheme<p::te_fp8_current>, std::uint16_t>("te per tensor, contiguous bf16", fixed_scheme<p::te_fp8_current>{},
                                                               33, 1024, 1024, qnum::per_tensor(), true, dtype::bf16, false, 41, true);
  check_holder<fixed_scheme<p::te_fp8_current>, float>("te per tensor, rows of 1001", fixed_scheme<p::te_fp8_current>{}, 9, 1001,
                                                       1001, qnum::per_tensor(), true, dtype::bf16, false, 41, true);
  check_holder<fixed_scheme<p::int8_sym>, std::uint16_t>("int8 per tensor, contiguous bf16", fixed_scheme<p::int8_sym>{}, 20, 512,
                                                         512, qnum::per_tensor(), true, dtype::bf16, false, 41, true);
  // The tile path (group width dividing 32 chunks, whole chunks): tails of groups and of tiles.
  check_holder<fixed_scheme<p::int8_sym>, std::uint16_t>("tile: int8 g32 bf16, tail group", fixed_scheme<p::int8_sym>{}, 5, 136,
                                                          136, qnum::group_size(32));
  check_holder<fixed_scheme<p::slime_int4_qat>, float>("tile: slime g32 fp32, partial tile", fixed_scheme<p::slime_int4_qat>{}, 4,
                                                       1056, 1060, qnum::group_size(32));
  check_holder<fixed_scheme<p::deepgemm_fp8_ue8m0>, std::uint16_t>("tile: 1x128 bf16", fixed_scheme<p::deepgemm_fp8_ue8m0>{}, 3,
                                                                   264, 264, p::deepseek_act);
  check_holder<fixed_scheme<p::ct_w4a16_asym>, std::uint16_t>("tile: asym g64 bf16", fixed_scheme<p::ct_w4a16_asym>{}, 4, 200,
                                                              200, qnum::group_size(64));
  // Whole tiles (1024 bf16 / 512 fp32 elements inside the row) beside a partial one, groups of 4 and 8 lanes:
  // x * inv with and without a clamp to choose by the bound, asymmetric.
  check_holder<fixed_scheme<p::torchao_int8_sym>, std::uint16_t>("tile: torchao int8 g32 bf16, whole tiles",
                                                                 fixed_scheme<p::torchao_int8_sym>{}, 6, 2080, 2080, qnum::group_size(32));
  check_holder<fixed_scheme<p::torchao_int4_sym>, std::uint16_t>("tile: torchao int4 g32 bf16, whole tiles",
                                                                 fixed_scheme<p::torchao_int4_sym>{}, 5, 3072, 3072, qnum::group_size(32));
  check_holder<fixed_scheme<p::ct_w4a16_asym>, std::uint16_t>("tile: asym g64 bf16, whole tiles", fixed_scheme<p::ct_w4a16_asym>{}, 4,
                                                              2112, 2112, qnum::group_size(64));
  // Whole tiles of mostly finite inputs (one element in ~500 special): most warps' groups take one code path, chosen
  // once for the warp (fake quantization: with finite scales, no NaN test at the store; asymmetric: unclamped); a
  // warp with a NaN or an infinity in one group takes the division for all of them.
  check_holder<fixed_scheme<p::slime_int4_qat>, std::uint16_t, std::uint16_t>("tile: slime g32 bf16, whole tiles, mostly finite",
                                                                              fixed_scheme<p::slime_int4_qat>{}, 16, 2048, 2048,
                                                                              qnum::group_size(32), false, dtype::bf16, false, 4099);
  check_holder<fixed_scheme<p::ct_w4a16_asym>, std::uint16_t>("tile: asym g32 bf16, mostly finite", fixed_scheme<p::ct_w4a16_asym>{},
                                                              16, 2048, 2048, qnum::group_size(32), false, dtype::bf16, false, 4099);
  check_holder<fixed_scheme<p::int8_sym>, float>("tile: int8 g32 fp32, whole tiles, mostly finite", fixed_scheme<p::int8_sym>{}, 8,
                                                 2048, 2048, qnum::group_size(32), false, dtype::bf16, false, 4099);
  check_holder<fixed_scheme<p::nvfp4>, std::uint16_t, std::uint16_t>("tile: nvfp4 g16 bf16 two-level", fixed_scheme<p::nvfp4>{},
                                                                     6, 48, 48, p::nvfp4_block, false, dtype::bf16, true);
  check_holder<fixed_scheme<p::nvfp4>, std::uint16_t>("nvfp4 two-level", fixed_scheme<p::nvfp4>{}, 9, 50, 56, p::nvfp4_block, false,
                                                      dtype::bf16, true);
}
