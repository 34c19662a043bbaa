#pragma once
#include <nghttp2/nghttp2.h>
