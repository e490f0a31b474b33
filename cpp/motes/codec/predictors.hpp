// Predictors (docs/format.md §4.12): values of a block to words that compress, and back.
// Internal to codec/: the block format (codec.cpp) calls these; the grid and quantile
// helpers of codec.hpp are defined with them (predictors.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "motes/codec/codec.hpp"

namespace motes::codec {

// words = predictor(values) for n values of type t; returns the parameter (the reference of
// Predictor::offset); ok = false when the predictor cannot take these values (off the grid,
// codes missing, a type it does not suit).
uint64_t predict(Predictor p, const ValueType& t, const unsigned char* values, size_t n, const Context& ctx,
                 unsigned char* words, bool& ok);
// In place: values from words, given the block's parameter (or grid origin and step).
void unpredict(Predictor p, const ValueType& t, unsigned char* data, size_t n, const Context& ctx, uint64_t param,
               double origin, double step);

}  // namespace motes::codec
