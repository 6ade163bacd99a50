// Kubernetes resource quantities ("64Mi", "10G", "1500m", "2e3") as exact integers, for the
// byte sizes and bandwidth floors in a TrainingJob spec (the API has no floats in spec).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ringleader::api {

// The quantity's value as an integer, or nullopt when the text is not a quantity, is negative,
// has a fractional value ("1.5" bytes) or does not fit in int64.
std::optional<std::int64_t> ParseIntegerQuantity(std::string_view text);

// "64Mi" for 67108864, "10G" for 10000000000, else the plain number: the shortest exact form.
std::string FormatQuantity(std::int64_t value);

// "11.8 GB/s" (decimal units, as nccl-tests reports GB/s).
std::string FormatBandwidth(double bytes_per_second);

}  // namespace ringleader::api
