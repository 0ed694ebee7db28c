// The Catch2 test runner's main(); every other tests/*.cpp adds test cases.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
