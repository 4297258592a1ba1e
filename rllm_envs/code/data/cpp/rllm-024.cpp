#include <cstdio>
#include <iostream>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    long long n;
    std::cin >> n;
    long long total = 0;
    for (long long i = 0; i < n; ++i) {
        long long x;
        std::cin >> x;
        total += x;
    }
    // total and n are exact in a double, so the quotient is correctly rounded.
    double avg = static_cast<double>(total) / static_cast<double>(n);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6f", avg);
    std::cout << buf << '\n';
    return 0;
}
