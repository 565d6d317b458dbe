// tests/gpu/test_quantize_device_runtime.cu: the run-time scheme on the device (every launcher's fallback)
// gives the host API's bits, for 1xG groups, per-row and per-tensor scales and the float formats.
#include "quantize_check.cuh"

using namespace qtest;

TEST_CASE("device 1xG groups == host (slime int4 g32, compressed-tensors asym g128, generic G)") {
  namespace p = qnum::presets;
  check_case<qnum::qint4, std::uint16_t>("slime g32 bf16", p::slime_int4_qat, 9, 100, 104, qnum::group_size(32));
  check_case<qnum::qint4, std::uint16_t, std::uint16_t>("slime g32 bf16 out", p::slime_int4_qat, 9, 96, 96, qnum::group_size(32));
  check_case<qnum::qint4, std::uint16_t>("slime ckpt g128", p::slime_int4_checkpoint, 5, 300, 301, qnum::group_size(128));
  check_case<qnum::qint4, float>("ct asym g128 fp32", p::ct_w4a16_asym, 8, 300, 300, p::ct_group128);
  check_case<qnum::qint4, std::uint16_t>("ct asym g128 fp16", p::ct_w4a16_asym, 8, 260, 264, p::ct_group128, false,
                                        qnum::dtype::fp16);
  check_case<qnum::quint8, float>("torchao uint8 asym g64", p::torchao_uint8_asym, 6, 130, 133, qnum::group_size(64));
  check_case<qnum::qint4, float>("generic G=48", p::torchao_int4_sym, 7, 150, 150, qnum::group_size(48));
  check_case<qnum::qint4, std::uint16_t>("generic G=5", p::slime_int4_qat, 7, 23, 23, qnum::group_size(5));
  check_case<qnum::qint8, float>("per-row short", p::torchao_int8_sym, 11, 777, 780, qnum::per_row());
  check_case<qnum::qint8, std::uint16_t>("per-row long (block kernel)", p::torchao_int8_sym, 3, 5000, 5000, qnum::per_row());
}

TEST_CASE("device float formats == host (DeepGEMM 1x128 ue8m0, 128x128, MXFP4, NVFP4, TE per tensor)") {
  namespace p = qnum::presets;
  check_case<qnum::fp8_e4m3, std::uint16_t>("deepgemm 1x128 ue8m0", p::deepgemm_fp8_ue8m0, 9, 200, 200, p::deepseek_act);
  check_case<qnum::fp8_e4m3, std::uint16_t>("deepgemm 128x128", p::deepgemm_fp8, 130, 260, 264, p::deepseek_weight);
  check_case<qnum::fp8_e4m3, float>("deepgemm 128x128 fp32", p::deepgemm_fp8_ue8m0, 129, 131, 131, p::deepseek_weight);
  check_case<qnum::fp4_e2m1, std::uint16_t>("mxfp4", p::mxfp4, 9, 70, 72, p::mx_block);
  check_case<qnum::fp8_e4m3, float>("mxfp8 rceil", p::mxfp8_rceil, 9, 64, 64, p::mx_block);
  check_case<qnum::fp4_e2m1, float>("nvfp4 one-level", p::nvfp4, 9, 50, 50, p::nvfp4_block);
  check_case<qnum::fp4_e2m1, std::uint16_t>("nvfp4 two-level", p::nvfp4, 9, 50, 56, p::nvfp4_block, false,
                                            qnum::dtype::bf16, true);
  check_case<qnum::fp8_e4m3, float>("te per tensor, two kernels", p::te_fp8_current, 33, 1000, 1003, qnum::per_tensor(), true);
  check_case<qnum::fp8_e4m3, std::uint16_t>("te per tensor, one block", p::te_fp8_current, 5, 100, 100, qnum::per_tensor(), false);
  check_case<qnum::qint4, float>("asym per tensor, two kernels", p::ct_w4a16_asym,
                                17, 300, 300, qnum::per_tensor(), true);
}
