// qnum/qnum.hpp: umbrella of every host-safe qnum header (compiles with a plain C++17 compiler).
#pragma once

#include "qnum/config.hpp"
#include "qnum/format.hpp"
#include "qnum/round.hpp"
#include "qnum/codec.hpp"
#include "qnum/random.hpp"
#include "qnum/dynamic_scale.hpp"
#include "qnum/int8_adam.hpp"
#include "qnum/pack.hpp"
#include "qnum/layout/compressed_tensors.hpp"
#include "qnum/layout/gptq_awq.hpp"
#include "qnum/layout/gguf.hpp"
#include "qnum/layout/marlin.hpp"
#include "qnum/layout/fp8_block.hpp"
