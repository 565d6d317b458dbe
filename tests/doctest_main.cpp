// tests/doctest_main.cpp: the one doctest main shared by every host test executable.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
