#include <cstdint>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

// Non-negative big integer, little-endian limbs in base 10^9.
using Big = std::vector<std::uint32_t>;
static const std::uint32_t BASE = 1000000000u;

static std::uint32_t mod_small(const Big& a, std::uint32_t m) {
    std::uint64_t r = 0;
    for (std::size_t i = a.size(); i-- > 0;) r = (r * BASE + a[i]) % m;
    return static_cast<std::uint32_t>(r);
}

static void mul_small(Big& a, std::uint32_t m) {
    std::uint64_t carry = 0;
    for (auto& limb : a) {
        std::uint64_t cur = static_cast<std::uint64_t>(limb) * m + carry;
        limb = static_cast<std::uint32_t>(cur % BASE);
        carry = cur / BASE;
    }
    while (carry) {
        a.push_back(static_cast<std::uint32_t>(carry % BASE));
        carry /= BASE;
    }
}

static std::string to_string(const Big& a) {
    std::string s = std::to_string(a.back());
    for (std::size_t i = a.size() - 1; i-- > 0;) {
        std::string part = std::to_string(a[i]);
        s += std::string(9 - part.size(), '0') + part;
    }
    return s;
}

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int n;
    std::cin >> n;
    std::uint32_t g = 0;
    Big l{1};
    for (int i = 0; i < n; ++i) {
        std::uint32_t x;
        std::cin >> x;
        g = std::gcd(g, x);
        std::uint32_t d = std::gcd(mod_small(l, x), x);  // gcd(l, x)
        mul_small(l, x / d);
    }
    std::cout << g << ' ' << to_string(l) << '\n';
    return 0;
}
