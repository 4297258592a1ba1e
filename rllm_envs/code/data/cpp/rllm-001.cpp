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
    std::cout << total << '\n';
    return 0;
}
