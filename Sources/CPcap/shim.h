#pragma once
#include <pcap/pcap.h>
