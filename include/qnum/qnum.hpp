// qnum/qnum.hpp: umbrella of every host-safe qnum header (compiles with a plain C++17 compiler).
#pragma once

#include "qnum/config.hpp"
#include "qnum/format.hpp"
#include "qnum/round.hpp"
#include "qnum/codec.hpp"
#include "qnum/random.hpp"
#include "qnum/scale.hpp"
#include "qnum/quantize.hpp"
#include "qnum/ste.hpp"
#include "qnum/quantize_tensor.hpp"
#include "qnum/presets.hpp"
