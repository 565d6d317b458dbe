# tools/gpu-env.sh: sourced by tools/bench-device.sh and tools/gpu-check.sh. Puts the CUDA toolkit on PATH
# and sets have_smi (1 where nvidia-smi is) and arch (QNUM_GPU_ARCH, else the compute capability nvidia-smi
# reports without the dot, else 90).
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="$PATH:/usr/local/cuda/bin"
have_smi=0
command -v nvidia-smi >/dev/null && have_smi=1
arch=${QNUM_GPU_ARCH:-}
if [ -z "$arch" ] && [ $have_smi = 1 ]; then
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .' || true)
fi
arch=${arch:-90}
