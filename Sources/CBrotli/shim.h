#pragma once
#include <brotli/decode.h>
