// names.cpp -- a C++ workload whose hot functions have qualified names:
// a class template in nested namespaces instantiated with a std::string
// key (a long mangled name), one of its methods, a function template, a
// lambda, an operator, and small functions and methods inlined into them
// (also the standard library's: std::map's lower_bound, std::string's
// compare); a class of an anonymous namespace, whose methods the DWARF
// gives no linkage name.  t_names.sh builds it with g++ -O2 -g and profiles it; every
// frame's name must be what `addr2line -C -f -i` says.
// Usage: names [ROUNDS]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace app {
namespace detail {

// Inlined into everything below.
inline uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	return x ^ (x >> 29);
}

struct Acc {
	uint64_t v = 0;
	// A method that is inlined: its DWARF may name it without a
	// linkage name.
	Acc &operator+=(uint64_t x)
	{
		v = mix(v + x);
		return *this;
	}
};

} // namespace detail

template <typename K>
class Cache {
public:
	explicit Cache(unsigned n)
	{
		for (unsigned i = 0; i < n; i++)
			keys_.push_back(key(i));
		for (unsigned i = 0; i < n; i += 2)
			map_[keys_[i]] = i;
	}
	__attribute__((noinline)) uint64_t fill(int rounds);

private:
	static K key(unsigned i);
	std::vector<K> keys_;
	std::map<K, uint64_t> map_;
};

template <>
std::string Cache<std::string>::key(unsigned i)
{
	char b[32];
	snprintf(b, sizeof b, "key-%08x", (unsigned)detail::mix(i));
	return b;
}

template <typename K>
uint64_t Cache<K>::fill(int rounds)
{
	detail::Acc acc;
	for (int r = 0; r < rounds; r++)
		for (size_t i = 0; i < keys_.size(); i++) {
			auto it = map_.lower_bound(keys_[i]);
			acc += it == map_.end() ? i : it->second + r;
		}
	return acc.v;
}

template <typename T, int N>
__attribute__((noinline)) T churn(T seed, int n)
{
	T x = seed;
	auto step = [&](T y) { return detail::mix(y + N) ^ x; };
	for (int i = 0; i < n; i++)
		x = step(x + (T)i);
	return x;
}

} // namespace app

// Internal linkage: g++ gives these no linkage name in the DWARF, and
// addr2line names the method that is not inlined by its symbol.
namespace {
struct Hasher {
	uint64_t k;
	uint64_t step(uint64_t x)
	{
		for (int i = 0; i < 16; i++)
			x = x * k + (x >> 29);
		return x;
	}
	__attribute__((noinline)) uint64_t run(uint64_t x, int n)
	{
		for (int i = 0; i < n; i++)
			x = step(x) ^ (uint64_t)i;
		return x;
	}
};
} // namespace

static volatile uint64_t sink;

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1;
	app::Cache<std::string> cache(512);
	for (int r = 0; r < rounds; r++) {
		sink += cache.fill(300);
		sink += app::churn<uint64_t, 7>(r, 30000000);
		sink += Hasher{ 0x9e3779b97f4a7c15ULL + sink }.run(r, 1000000);
	}
	printf("names done\n");
	return 0;
}
