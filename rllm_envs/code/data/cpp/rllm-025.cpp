#include <cstdint>
#include <iostream>
#include <string>
#include <utility>

static const std::uint64_t MOD = 1000000007ULL;

// Returns (F(n), F(n+1)) mod MOD by fast doubling.
static std::pair<std::uint64_t, std::uint64_t> fib(std::uint64_t n) {
    std::uint64_t a = 0, b = 1;  // F(0), F(1)
    int top = 63;
    while (top >= 0 && !((n >> top) & 1)) --top;
    for (int bit = top; bit >= 0; --bit) {
        std::uint64_t c = a * ((2 * b + MOD - a) % MOD) % MOD;  // F(2k)
        std::uint64_t d = (a * a + b * b) % MOD;                // F(2k+1)
        if ((n >> bit) & 1) {
            a = d;
            b = (c + d) % MOD;
        } else {
            a = c;
            b = d;
        }
    }
    return {a, b};
}

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int t;
    std::cin >> t;
    std::string out;
    for (int k = 0; k < t; ++k) {
        std::uint64_t n;
        std::cin >> n;
        out += std::to_string(fib(n).first);
        out += '\n';
    }
    std::cout << out;
    return 0;
}
