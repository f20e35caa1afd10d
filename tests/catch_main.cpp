// The Catch2 main, compiled once as host C++ and linked by every test binary.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
