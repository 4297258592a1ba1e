#include <iostream>
#include <vector>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int n;
    std::cin >> n;
    std::vector<char> composite(n + 1, 0);
    int count = 0;
    for (long long p = 2; p <= n; ++p) {
        if (composite[p]) continue;
        ++count;
        for (long long q = p * p; q <= n; q += p) composite[q] = 1;
    }
    std::cout << count << '\n';
    return 0;
}
