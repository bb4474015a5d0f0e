// throw.cc: a C++ program that throws and catches N exceptions, the example
// of "your program" (docs/real-programs.md): each throw passes the
// libstdcxx:throw marker that Debian's libstdc++ carries (readelf -n
// /lib/x86_64-linux-gnu/libstdc++.so.6 | grep -A3 stapsdt), so the kit can
// trace a library no one here wrote, by path, with every back-end:
//   make build/throw
//   make run THREADS=1..2 TARGET=/lib/x86_64-linux-gnu/libstdc++.so.6
//       PROBE=libstdcxx:throw WORKLOAD='build/throw 100000'    (one line)
// It prints the count it caught and exits 1 if that is not N (a marker
// that disturbed the unwinder would show here); needs g++ (Debian g++).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: throw N (the exceptions to throw and catch)\n");
		return 2;
	}
	char *end;
	errno = 0;
	long n = std::strtol(argv[1], &end, 10);
	if (errno || *end || n < 0) {
		std::fprintf(stderr, "throw: N '%s' is not allowed: want a whole number >= 0\n",
			     argv[1]);
		return 2;
	}
	long caught = 0;
	for (long i = 0; i < n; i++) {
		try {
			throw std::runtime_error("kit");
		} catch (const std::runtime_error &) {
			caught++;
		}
	}
	if (std::printf("%ld\n", caught) < 0)
		return 1;
	return caught == n ? 0 : 1;
}
